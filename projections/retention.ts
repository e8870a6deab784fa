/**
 * Retention (issue 39 part 1): the policies (`retention:policies`, from the `retention` stream, scope
 * `instance`) with an instance audit entry per change (`RetentionPolicySet`, actor and reason), and the set of
 * channels messages were sent in (`retention:channels:<s>`, one SADD per send into the piece of the channel's
 * shard: commutative, so every partition writes it, and in the channel's shard, so a send's batch stays out of
 * the generation's main slot), which the sweep walks (the union of the pieces). The erasure of a message is projected by `messages`, `fileUses` and the
 * search index, as a deletion.
 */
import { RETENTION_STREAM } from '../src/domain/retention/events.ts';
import { emptyPolicies, evolvePolicies, type RetentionPolicies } from '../src/domain/retention/state.ts';
import { rm, shardOf } from '../src/readmodel/keys.ts';
import { audit } from './moderation.ts';
import type { Projection } from './types.ts';

export const retentionProjection: Projection = {
  name: 'retention',
  handles: ['RetentionPolicySet', 'MessageSent'],
  async apply(e, tx) {
    if (e.type === 'MessageSent') {
      if (e.stream.startsWith('message-')) tx.sadd(rm.messageChannels(shardOf(e.data.message.channel)), e.data.message.channel);
      return;
    }
    if (e.type !== 'RetentionPolicySet' || e.stream !== RETENTION_STREAM) return;
    const before = (await tx.getJson<RetentionPolicies>(rm.retentionPolicies())) ?? emptyPolicies();
    tx.setJson(rm.retentionPolicies(), evolvePolicies(before, e, e.revision));
    const { scope, max_age_seconds } = e.data;
    audit(tx, e, {
      action: 'RetentionPolicySet',
      target: scope.type === 'instance' ? { type: 'Instance', id: 'instance' } : { type: scope.type === 'server' ? 'Server' : 'Channel', id: scope.id },
      reason: e.metadata.reason ?? null,
      details: { max_age_seconds },
    });
  },
};
