/**
 * Which workflow ran an episode, from its id and what its samples say, for the link to the Temporal
 * Web UI. The ids follow the rollout workflows (workflows/rollout-kinds.ts and each rollout): a test
 * checks them against the workflows a real run started (test/viewer/viewer-browser.test.ts).
 */
import type { Sample } from '../domain/types';

/** fallback: a Plan/Act job's single-agent rollout after its partner did not come (its records look like standard ones). */
export type RolloutShape = 'plan-act' | 'standard' | 'chat' | 'fallback' | 'agent' | 'tree' | 'horizon' | 'unknown';

/**
 * What kind of rollout made an episode, read from its samples; `planActJob`: the run is a Plan/Act
 * job (it keeps no trainingRun state), whose single-agent episodes are its fallback rollouts.
 */
export function shapeOf(runId: string, episodeId: string, samples: readonly Sample[], planActJob = false): RolloutShape {
  if (samples.some((s) => s.metadata.planHorizon !== undefined)) return 'horizon';
  if (/\/tree-rollout-\d+\/r\d+(\.\d+)*#\d+$/.test(episodeId)) return 'tree';
  if (/\/agent-rollout-\d+\/e\d+$/.test(episodeId)) return 'agent';
  if (episodeId.startsWith(`${runId}/`) && /\/r\d+(b\d+)?\/single-(b\d+-)?\d+$/.test(episodeId)) return planActJob ? 'fallback' : 'standard';
  if (samples.some((s) => s.metadata.chat !== undefined) || (episodeId.startsWith(`${runId}/`) && /\/r\d+\/chat-(b\d+-)?\d+$/.test(episodeId))) return 'chat';
  if (samples.some((s) => s.metadata.role === 'planner' || s.metadata.role === 'actor') && /\/r\d+(b\d+)?\/e\d+$/.test(episodeId)) return 'plan-act';
  return 'unknown';
}

/** The workflow to open for an episode (its own where it has one, else its rollout's), or undefined when unknown. */
export function episodeWorkflowId(runId: string, episodeId: string, shape: RolloutShape): string | undefined {
  const tail = episodeId.startsWith(`${runId}/`) ? episodeId.slice(runId.length + 1) : undefined;
  switch (shape) {
    case 'tree':
    case 'agent':
      // The rollout workflow's id, then the episode's own part.
      return episodeId.slice(0, episodeId.lastIndexOf('/'));
    case 'horizon': {
      const m = tail && /^r(\d+)\/e(\d+)$/.exec(tail);
      return m ? `${runId}/horizon-rollout-${m[1]}/ep-${m[2]}` : undefined;
    }
    case 'standard': {
      const m = tail && /^r(\d+)\/single-(?:b(\d+)-)?\d+$/.exec(tail);
      return m ? `${runId}/standard-rollout-${m[1]}${m[2] ? `-b${m[2]}` : ''}` : undefined;
    }
    case 'chat': {
      // workflows/rollout-kinds.ts: task.chat's standard rollout is chatRollout, `<run>/chat-rollout-<n>[-b<k>]`.
      const m = tail && /^r(\d+)\/chat-(?:b(\d+)-)?\d+$/.exec(tail);
      return m ? `${runId}/chat-rollout-${m[1]}${m[2] ? `-b${m[2]}` : ''}` : undefined;
    }
    case 'fallback': {
      const m = tail && /^r(\d+)\/single-\d+$/.exec(tail);
      return m ? `${runId}/fallback-r${m[1]}` : undefined;
    }
    case 'plan-act': {
      const m = tail && /^r(\d+)(?:b(\d+))?\/e\d+$/.exec(tail);
      if (m) return `${runId}/rollout-${m[1]}${m[2] ? `-b${m[2]}` : ''}`;
      // A planActJob's episodes ran in a rollout session (dual mode), whose id they start with.
      return sessionOfEpisode(episodeId);
    }
    default:
      return undefined;
  }
}

/** The workflow id a Plan/Act episode's id starts with (`<id>/r<n>[b<k>]/e<i>`): its rollout session in dual mode. */
export function sessionOfEpisode(episodeId: string): string | undefined {
  const session = episodeId.replace(/\/r\d+(?:b\d+)?\/e\d+$/, '');
  return session !== episodeId ? session : undefined;
}

/** The Web UI's page for a workflow id (its latest run). */
export function workflowUiUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
