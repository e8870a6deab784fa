export const BUILD_DIR: string;
export function entries(): string[];
export function builtName(file: string): string;
export function buildTests(o?: { log?: boolean }): Promise<{ entries: string[]; written: number; removed: number; ms: number }>;
export function removeStale(dir: string, keep: Set<string>, staleMs?: number): number;
