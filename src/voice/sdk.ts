/**
 * livekit-server-sdk, loaded on first use. The SDK (with jose and the protobuf runtime, some 200 modules) took
 * 0.4 s of CPU to load, and every process paid it at start (each test file, each CLI, each role process),
 * while only a service with voice configured ever calls it (issue 40).
 */
import type * as LiveKitSdk from 'livekit-server-sdk';

let loading: Promise<typeof LiveKitSdk> | undefined;

/** The SDK module (imported once, on the first call). */
export function livekitSdk(): Promise<typeof LiveKitSdk> {
  return (loading ??= import('livekit-server-sdk'));
}
