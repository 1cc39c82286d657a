/**
 * Makes sure a namespace exists with the project's search attributes, registering what is missing
 * (workers/namespace-setup.ts; a NamespaceSetupError says what to run where the server refuses).
 * The main job calls it for the namespace it uses, "default" included; scripts/scale-local.ts for
 * the namespace that keeps a deployment's runs apart from the main job's.
 */
import { Connection } from '@temporalio/client';
import { ensureNamespaceReady } from '../../workers/namespace-setup';

export async function ensureNamespace(address: string, namespace: string, opts: { retentionDays?: number; log?: (line: string) => void } = {}): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    await ensureNamespaceReady(connection, namespace, { address, create: true, ...opts });
  } finally {
    await connection.close();
  }
}
