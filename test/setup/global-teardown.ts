export default async function globalTeardown(): Promise<void> {
  (globalThis as { __temporalServer?: { stop(): void } }).__temporalServer?.stop();
}
