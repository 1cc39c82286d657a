export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __temporalServer?: { stop(): Promise<void> } }).__temporalServer?.stop();
}
