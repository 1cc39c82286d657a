/**
 * Search attributes the project registers on the dev server and sets from workflows,
 * so runs can be found in the Web UI and with `temporal workflow list --query`.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SEARCH_ATTRIBUTE_TYPES = {
  Experiment: 'Keyword',
  Role: 'Keyword',
  RolloutId: 'Int',
  Step: 'Int',
  FellBack: 'Bool',
} as const;

export const EXPERIMENT = defineSearchAttributeKey('Experiment', SearchAttributeType.KEYWORD);
export const ROLE = defineSearchAttributeKey('Role', SearchAttributeType.KEYWORD);
export const ROLLOUT_ID = defineSearchAttributeKey('RolloutId', SearchAttributeType.INT);
export const STEP = defineSearchAttributeKey('Step', SearchAttributeType.INT);
export const FELL_BACK = defineSearchAttributeKey('FellBack', SearchAttributeType.BOOL);
