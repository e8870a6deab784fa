/**
 * Which projector partition owns a scope (a server id or a user id; DESIGN §2): FNV-1a 32-bit of the
 * scope modulo the partition count. Every process must agree, so this never changes without a rebuild.
 */
export function partitionOf(scope: string, partitions: number): number {
  if (partitions <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < scope.length; i++) {
    h ^= scope.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}
