/**
 * Makes sure a namespace exists with the project's search attributes, so a deployment can keep its
 * runs apart from the main job's (whose in-process workers use the local folder store in "default").
 * Idempotent: an existing namespace or attribute is left as it is.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/search-attributes';

const INDEXED = temporal.api.enums.v1.IndexedValueType;
const INDEXED_TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: INDEXED.INDEXED_VALUE_TYPE_KEYWORD,
  Int: INDEXED.INDEXED_VALUE_TYPE_INT,
  Bool: INDEXED.INDEXED_VALUE_TYPE_BOOL,
};

export async function ensureNamespace(address: string, namespace: string, retentionDays = 7): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`) });
    } catch (err) {
      if (!/already exists/i.test(String(err))) throw err;
    }
    const searchAttributes = Object.fromEntries(Object.entries(SEARCH_ATTRIBUTE_TYPES).map(([name, type]) => [name, INDEXED_TYPES[type]!]));
    // A namespace just registered takes a moment to be known to every service.
    for (let attempt = 0; ; attempt++) {
      try {
        await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
        return;
      } catch (err) {
        if (/already exists/i.test(String(err))) return;
        if (attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await connection.close();
  }
}
