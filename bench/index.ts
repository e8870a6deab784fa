/** Every benchmark, in the order `npm run bench` runs them. A benchmark adds itself here. */
import type { Bench } from './lib.ts';
import append from './append.ts';
import upload from './upload.ts';
import history from './history.ts';
import limits from './limits.ts';
import memory from './memory.ts';
import rebuild from './rebuild.ts';
import send from './send.ts';
import ack from './ack.ts';
import postgres from './postgres.ts';
import search from './search.ts';
import push from './push.ts';
import previews from './previews.ts';
import fanout from './fanout.ts';
import ready from './ready.ts';
import compliance from './compliance.ts';
import footprint from './footprint.ts';
import sealing from './sealing.ts';
import sendDefault from './sendDefault.ts';
import gatewayCluster from './gatewayCluster.ts';
import clusterCosts from './clusterCosts.ts';

export const BENCHES: readonly Bench[] = [append, upload, send, rebuild, history, memory, limits, ack, postgres, search, push, previews, fanout, ready, compliance, sealing, footprint, sendDefault, gatewayCluster, clusterCosts];
