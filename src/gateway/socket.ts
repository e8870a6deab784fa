/**
 * One connected client: its authentication, what it was told (the servers it is subscribed to and, per
 * server, the channels it knows it can see), and sending with backpressure. The `visible` sets are the
 * gateway's record of the client's knowledge: every ChannelCreate sent adds to them, every ChannelDelete
 * removes, so a permission change is translated into exactly the difference the client needs.
 */
import type { WebSocket } from 'ws';
import type { ClientEventRoute } from '../../projections/types.ts';
import { DEFAULT_READY_FIELDS, type ReadyField } from './protocol.ts';
import { gatewayDelivered, gatewaySlowDropped } from '../metrics/registry.ts';
import { ActiveServers } from './activeServers.ts';

/** Where a socket is in its life. */
export type SocketState =
  /** Waiting for `Authenticate` (no `?token=`). */
  | 'unauthenticated'
  /** Authenticated; Ready is being built; events are queued, client frames held back. */
  | 'preparing'
  /** Ready sent; events flow. */
  | 'ready'
  /** Closing or closed. */
  | 'closed';

/** Why the gateway dropped a socket. */
export type DropReason = 'slow' | 'dead' | 'logout' | 'shutdown' | 'auth' | 'overflow' | 'error' | 'limit';

/** A queued client event (raw, before per-socket filtering). */
export interface QueuedEvent {
  route: ClientEventRoute;
  payload: Record<string, unknown> & { type: string };
}

/** A connected client. */
export class GatewaySocket {
  state: SocketState = 'unauthenticated';
  userId = '';
  sessionId = '';
  /** Counted as the user's presence (set once Ready was sent, cleared when the socket goes). */
  present = false;
  /** The Ready fields the client asked for (`?ready=`). */
  fields: ReadonlySet<ReadyField> = DEFAULT_READY_FIELDS;
  /** The settings keys the client asked Ready for (`?ready=user_settings[key]`). */
  settingsKeys: readonly string[] = [];
  /** Servers this socket is subscribed to → the channel ids it was told it can see. */
  readonly servers = new Map<string, Set<string>>();
  /**
   * Servers the client marked active with `Subscribe` (their members' profile changes reach it only
   * meanwhile); a bot's socket gets them for every server, as bonfire subscribes bots to every member topic.
   */
  readonly active = new ActiveServers();
  /** The socket authenticated with a bot token. */
  bot = false;
  /** Private channels (Saved Notes, DMs, groups) this socket was told about (Ready, ChannelCreate …). */
  readonly privateChannels = new Set<string>();
  /** How this socket's user stands with other users (kept by UserRelationship), for per-viewer `relationship`. */
  readonly relations = new Map<string, string>();
  /** Events that arrived while Ready was being built. */
  pending: QueuedEvent[] = [];
  /** Client frames that arrived before Ready was sent (answered after it). */
  heldFrames: string[] = [];
  /** A server ping is outstanding (set when pinged, cleared by the pong). */
  awaitingPong = false;

  constructor(
    readonly ws: WebSocket,
    /** Largest amount of unsent data (bytes) tolerated before the socket counts as too slow. */
    private readonly maxBuffered: number,
    /** Called once when the socket is dropped by the gateway. */
    private readonly onDrop: (s: GatewaySocket, reason: DropReason) => void,
  ) {}

  /**
   * Sends one frame (JSON text). A socket whose unsent data passes the limit is dropped at once: it cannot
   * hold up the others, whose sends never wait on it.
   */
  send(frame: Record<string, unknown>): void {
    if (this.state === 'ready' && (frame.type === 'Pong' || frame.type === 'Error')) {
      this.write(JSON.stringify(frame));
      return;
    }
    this.sendText(JSON.stringify(frame));
  }

  /** Sends a frame already serialised (an event sent unchanged to many sockets is serialised once). */
  sendText(text: string): void {
    // Once Ready went out, what goes through here is a client event (Pong and Error frames use `write`).
    if (this.state === 'ready') gatewayDelivered.inc();
    this.write(text);
  }

  private write(text: string): void {
    if (this.state === 'closed') return;
    this.ws.send(text);
    if (this.ws.bufferedAmount > this.maxBuffered) this.drop('slow');
  }

  /** Whether the socket is closing or closed (a method, so that checks after an await are not narrowed away). */
  isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Whether the socket was told it can see a channel of a server. */
  sees(serverId: string, channelId: string): boolean {
    return this.servers.get(serverId)?.has(channelId) ?? false;
  }

  /** Whether a server's members' profile changes reach this socket at `now` (a bot: always). */
  activeIn(serverId: string, now: number): boolean {
    return this.servers.has(serverId) && (this.bot || this.active.has(serverId, now));
  }

  /**
   * Drops the socket: a closing handshake when it can still be sent (`code`), otherwise the connection is
   * cut (a slow or dead peer would never read a close frame).
   */
  drop(reason: DropReason, code = 1000, message = ''): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (reason === 'slow') gatewaySlowDropped.inc();
    this.pending = [];
    this.heldFrames = [];
    if (reason === 'slow' || reason === 'dead' || reason === 'overflow') this.ws.terminate();
    else {
      this.ws.close(code, message);
      // A peer that never answers the close frame is cut after a grace period.
      setTimeout(() => this.ws.terminate(), 2000).unref();
    }
    this.onDrop(this, reason);
  }
}
