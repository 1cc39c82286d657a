/**
 * Makes sure a namespace can run the project's workflows: it exists, and it has the project's search
 * attributes (workflows/search-attributes.ts). Without them every workflow task that sets one fails
 * with BadSearchAttributes and is retried forever: the run hangs with no failure. What is missing is
 * registered where the server allows it (the dev server, a self-hosted server); where it does not
 * (no operator rights, a server's limit on attributes of a type) a NamespaceSetupError says what to
 * run. Used by the main job (scripts/main.ts), the worker processes that run workflows
 * (workers/main.ts) and scripts/scale-local.ts. Idempotent: what exists is left as it is.
 */
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_TYPES } from '../workflows/search-attributes';

/** The namespace cannot run the project's workflows and this process may not fix it; the message says what to run. */
export class NamespaceSetupError extends Error {
  override readonly name = 'NamespaceSetupError';
}

/** The services a Connection or a NativeConnection offers. */
export interface NamespaceServices {
  workflowService: Pick<temporal.api.workflowservice.v1.WorkflowService, 'describeNamespace' | 'registerNamespace'>;
  operatorService: Pick<temporal.api.operatorservice.v1.OperatorService, 'listSearchAttributes' | 'addSearchAttributes'>;
}

export interface EnsureNamespaceOptions {
  /** The server's address, for the commands the messages suggest. */
  address: string;
  /** Register the namespace if it does not exist (the main job); otherwise say how. */
  create?: boolean;
  retentionDays?: number;
  /** Told what was registered (and what could not be checked). */
  log?: (line: string) => void;
}

const INDEXED = temporal.api.enums.v1.IndexedValueType;
export const INDEXED_TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: INDEXED.INDEXED_VALUE_TYPE_KEYWORD,
  Int: INDEXED.INDEXED_VALUE_TYPE_INT,
  Bool: INDEXED.INDEXED_VALUE_TYPE_BOOL,
};
const TYPE_NAMES = new Map(Object.entries(INDEXED_TYPES).map(([name, type]) => [type, name]));

/** gRPC status codes (both connections' errors carry one as `code`). */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;
const UNAUTHENTICATED = 16;
const codeOf = (err: unknown): number | undefined => (typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : undefined);
const reasonOf = (err: unknown): string => (err as { details?: string })?.details || (err instanceof Error ? err.message : String(err));

/** The `temporal operator search-attribute create` commands that register `names` (one per type: the CLI takes one --type). */
export function searchAttributeCommands(names: readonly string[], namespace: string, address: string): string[] {
  const byType = new Map<string, string[]>();
  for (const name of names) {
    const type = SEARCH_ATTRIBUTE_TYPES[name as keyof typeof SEARCH_ATTRIBUTE_TYPES];
    byType.set(type, [...(byType.get(type) ?? []), name]);
  }
  return [...byType].map(([type, ns]) => `temporal operator search-attribute create --address ${address} --namespace ${namespace} ${ns.map((n) => `--name ${n}`).join(' ')} --type ${type}`);
}

export async function ensureNamespaceReady(conn: NamespaceServices, namespace: string, opts: EnsureNamespaceOptions): Promise<void> {
  await ensureNamespaceExists(conn, namespace, opts);
  const wanted = Object.keys(SEARCH_ATTRIBUTE_TYPES);
  let missing: string[];
  try {
    // A namespace just registered takes a moment to be known to every service.
    missing = await retryWhileNotFound(() => missingSearchAttributes(conn, namespace));
  } catch (err) {
    const code = codeOf(err);
    if (code !== PERMISSION_DENIED && code !== UNIMPLEMENTED && code !== UNAUTHENTICATED) throw err;
    // Temporal Cloud, or a key without operator rights: the run will say so if a workflow task fails over it.
    opts.log?.(`could not list the search attributes of namespace ${namespace} (${reasonOf(err)}); the project's are ${wanted.join(', ')}: ${searchAttributeCommands(wanted, namespace, opts.address).join('; ')}`);
    return;
  }
  if (missing.length === 0) return;
  try {
    const searchAttributes = Object.fromEntries(missing.map((n) => [n, INDEXED_TYPES[SEARCH_ATTRIBUTE_TYPES[n as keyof typeof SEARCH_ATTRIBUTE_TYPES]]!]));
    await retryWhileNotFound(() => conn.operatorService.addSearchAttributes({ namespace, searchAttributes }));
  } catch (err) {
    // Another process registered them at the same moment.
    if (codeOf(err) === ALREADY_EXISTS || /already exists/i.test(reasonOf(err))) return;
    throw new NamespaceSetupError(
      `namespace ${namespace} lacks the project's search attributes ${missing.join(', ')}, without which its workflows cannot run, and the server refused to register them (${reasonOf(err)}). Register them (or use a namespace that has them, TEMPORAL_NAMESPACE):\n${searchAttributeCommands(missing, namespace, opts.address).map((c) => `  ${c}`).join('\n')}`,
    );
  }
  opts.log?.(`registered the search attributes ${missing.join(', ')} in namespace ${namespace}`);
}

/**
 * The project's search attributes that namespace `namespace` lacks; a NamespaceSetupError if it has
 * one of them with another type (a workflow setting it would fail, and registering cannot fix it).
 */
export async function missingSearchAttributes(conn: Pick<NamespaceServices, 'operatorService'>, namespace: string): Promise<string[]> {
  const registered = await conn.operatorService.listSearchAttributes({ namespace });
  const have = new Map<string, number>([...Object.entries(registered.customAttributes ?? {}), ...Object.entries(registered.systemAttributes ?? {})]);
  const wanted = Object.keys(SEARCH_ATTRIBUTE_TYPES) as Array<keyof typeof SEARCH_ATTRIBUTE_TYPES>;
  const otherType = wanted.filter((n) => have.has(n) && have.get(n) !== INDEXED_TYPES[SEARCH_ATTRIBUTE_TYPES[n]]);
  if (otherType.length > 0) {
    const what = otherType.map((n) => `${n} is ${TYPE_NAMES.get(have.get(n)!) ?? `type ${have.get(n)}`} there, the project's is ${SEARCH_ATTRIBUTE_TYPES[n]}`).join('; ');
    throw new NamespaceSetupError(`namespace ${namespace} has search attributes of other types than the project's (${what}): use another namespace (TEMPORAL_NAMESPACE), or remove them (temporal operator search-attribute remove --namespace ${namespace} --name <name>) and run this again`);
  }
  return wanted.filter((n) => !have.has(n));
}

async function ensureNamespaceExists(conn: NamespaceServices, namespace: string, opts: EnsureNamespaceOptions): Promise<void> {
  try {
    await conn.workflowService.describeNamespace({ namespace });
    return;
  } catch (err) {
    if (codeOf(err) !== NOT_FOUND) {
      // A key scoped to its namespace may not describe it: the calls below tell what is wrong, if anything.
      if (codeOf(err) === PERMISSION_DENIED) return;
      throw err;
    }
  }
  const how = `temporal operator namespace create --address ${opts.address} --namespace ${namespace}`;
  if (!opts.create) throw new NamespaceSetupError(`namespace ${namespace} does not exist on ${opts.address}: create it with\n  ${how}\n(the main job, scripts/main.sh, creates it where the server allows)`);
  try {
    await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(`${opts.retentionDays ?? 7} days`) });
    opts.log?.(`registered namespace ${namespace} (retention ${opts.retentionDays ?? 7} days)`);
  } catch (err) {
    if (codeOf(err) === ALREADY_EXISTS || /already exists/i.test(reasonOf(err))) return;
    throw new NamespaceSetupError(`namespace ${namespace} does not exist on ${opts.address} and the server refused to create it (${reasonOf(err)}): create it with\n  ${how}`);
  }
}

/** `call`, tried again for 10 s while the server does not know a just-registered namespace yet. */
async function retryWhileNotFound<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (codeOf(err) !== NOT_FOUND || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
