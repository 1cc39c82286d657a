/**
 * Reads runs for the viewer: metrics files under the runs folder and rollout records in the blob
 * store, read-only and on request (nothing polls the store; a running job never waits on the viewer).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { RolloutRecord, SessionRecord } from '../contracts/rollout-record';
import type { RunState } from '../contracts/training-run';
import { readSamples } from '../contracts/sample-set';
import type { BlobRef, ChatSampleRef, Sample } from '../domain/types';
import type { KeptEpisode, StoredCheck } from '../chat/kept-episode';
import { loadTokenizerDir } from '../model/tokenizer';
import { resolveTokenizerDir } from '../model/tokenizer-dir';
import type { TextTokenizer } from '../model/tokenizer-types';
import { getJson, type BlobStore } from '../store/blob-store';
import { names, runKey, stepOfName } from '../store/run-names';
import { parseMetricsJsonl } from '../report/parse-metrics';
import type { RunMetrics } from '../report/run-metrics';
import { asViewerError, badRequest, notFound, ViewerError } from './errors';
import { numberSamples, type NumberedSample } from './step-view';
import type { RecordedCallView, RunList, RunStatusView, RunView, StepListItem } from './view-types';
import { readEpisodeTimelines } from '../gateway/recorder';
import type { PartnerSamples } from './episode-view';
import { sessionOfEpisode } from './links';

/** The baselines' own runs that train through trainGrpo too: the RFT branch, `<run>~rft` (workflows/baselines.ts). */
const RELATED_SUFFIXES = ['~rft'];

/** A run id as the viewer takes it: what names.* turn into a key, never a path that climbs out. */
export function checkRunId(id: string): string {
  if (id.length === 0 || id.length > 300) throw badRequest(`run: expected a run (workflow) id of 1-300 characters, got ${id.length}`);
  const key = runKey(id);
  if (key === '.' || key === '..') throw badRequest(`run: '${id}' is not a run id`);
  return id;
}

/**
 * A recorded update's RL step: its global step past the one RL started from where the run saved it;
 * else its place among the run's recorded updates (Plan/Act jobs train once per rollout).
 */
export function rlStepOf(step: number, index: number, rlStart: number | undefined): number {
  return rlStart !== undefined ? step - rlStart : index + 1;
}

/** A run's workflow state from the Temporal server, or undefined when the server does not know it or did not answer. */
export type WorkflowStateLookup = (runId: string) => Promise<Exclude<RunStatusView['state'], 'unknown'> | undefined>;

/**
 * The tokenizer samples were written with: task.chat's, which chat samples name (model.tokenizer:
 * `qwen3` or a tokenizer directory, resolved on this machine as the workers resolve it), else the
 * viewer's own (--tokenizer). A run's samples share one. Ids past its vocabulary (a chat run written
 * before its samples named their tokenizer, read with the project's) are refused, not drawn as nothing.
 */
export function tokenizerOf(samples: readonly NumberedSample[], fallback: TextTokenizer): TextTokenizer {
  const chat = samples.find((n) => n.sample.metadata.chat !== undefined)?.sample.metadata.chat;
  let tok = fallback;
  if (chat !== undefined) {
    try {
      tok = loadTokenizerDir(resolveTokenizerDir(chat.tokenizer));
    } catch (err) {
      throw new ViewerError(502, 'tokenizer-unreadable', `the chat samples' tokenizer ${JSON.stringify(chat.tokenizer)} (model.tokenizer) cannot be read on this machine: ${(err as Error).message}`);
    }
  }
  for (const { sample: s } of samples) {
    const past = [...s.promptTokens, ...s.responseTokens].find((id) => id >= tok.vocabSize || id < 0);
    if (past !== undefined) {
      throw new ViewerError(502, 'tokenizer-mismatch', `the samples of ${s.metadata.episodeId} hold id ${past}, past the ${tok.vocabSize}-id vocabulary of the tokenizer they are read with: the run used another (start the viewer with --tokenizer <its tokenizer>, e.g. qwen3)`);
    }
  }
  return tok;
}

export class RunData {
  /** Sample sets read, by sha256 (blobs never change), the oldest dropped past cacheBytes of blob. */
  private readonly sets = new Map<string, { samples: Sample[]; bytes: number }>();
  private cachedBytes = 0;

  constructor(
    private readonly store: BlobStore,
    private readonly runsDir: string,
    private readonly cacheBytes = 256 << 20,
    private readonly workflowState?: WorkflowStateLookup,
  ) {}

  /** The run's workflow status, else its result file (the main job writes it when the run completed). */
  async status(runId: string): Promise<RunStatusView> {
    const state = await this.workflowState?.(runId);
    if (state) return { state, from: 'workflow' };
    // The main job names the file by the raw workflow id: read only ids that are plain file names.
    if (runKey(runId) === runId) {
      const done = await fs.stat(path.join(this.runsDir, `${runId}.result.json`)).then(() => true, () => false);
      if (done) return { state: 'completed', from: 'result file' };
    }
    return { state: 'unknown', from: 'none' };
  }

  /** Runs with a metrics file, newest first. */
  async listRuns(offset: number, limit: number): Promise<RunList> {
    let entries: string[];
    try {
      entries = await fs.readdir(this.runsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') entries = [];
      else throw err;
    }
    const runs = (
      await Promise.all(
        entries.map(async (id) => {
          try {
            const st = await fs.stat(path.join(this.runsDir, id, 'metrics.jsonl'));
            return { id, modified: st.mtime.toISOString(), ms: st.mtimeMs };
          } catch {
            return undefined;
          }
        }),
      )
    ).filter((r): r is { id: string; modified: string; ms: number } => r !== undefined);
    runs.sort((a, b) => b.ms - a.ms || a.id.localeCompare(b.id));
    return {
      runs: runs.slice(offset, offset + limit).map(({ id, modified }) => ({ id, modified })),
      page: { offset, limit, total: runs.length },
    };
  }

  /** The run's metrics (undefined: no file) or why they could not be read. */
  async metrics(runId: string): Promise<{ metrics?: RunMetrics; error?: string }> {
    const file = path.join(this.runsDir, runKey(runId), 'metrics.jsonl');
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    // A line being appended right now is not a bad line: read up to the last complete one.
    const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
    try {
      return { metrics: parseMetricsJsonl(complete, file) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  /** Global steps with a rollout record, ascending. */
  async recordedSteps(runId: string): Promise<number[]> {
    const found = await this.store.listNames(names.rolloutRecordPrefix(runId));
    return found.map(stepOfName).filter(Number.isFinite).sort((a, b) => a - b);
  }

  async runView(runId: string, offset: number, limit: number): Promise<RunView> {
    const [{ metrics, error }, steps, related, status] = await Promise.all([
      this.metrics(runId),
      this.recordedSteps(runId),
      Promise.all(RELATED_SUFFIXES.map(async (suffix) => ((await this.recordedSteps(runId + suffix)).length > 0 ? runId + suffix : undefined))),
      this.status(runId),
    ]);
    if (!metrics && !error && steps.length === 0) throw notFound(`run '${runId}': no metrics file in ${this.runsDir} and no rollout records in the store`);
    const rlStart = steps.length > 0 ? await this.rlStartStep(runId) : undefined;
    const byStep = new Map((metrics?.rl ?? []).map((p) => [p.step, p]));
    const items: StepListItem[] = steps.map((step, i) => {
      const rlStep = rlStepOf(step, i, rlStart);
      const line = rlStart !== undefined ? byStep.get(rlStep) : undefined;
      return { step, rlStep, ...(line ? { metrics: line } : {}) };
    });
    const rl = metrics?.rl ?? [];
    const sft = metrics?.sftLoss ?? [];
    return {
      id: runId,
      status,
      steps: items.slice(offset, offset + limit),
      page: { offset, limit, total: items.length },
      rlSteps: rl.length,
      evals: metrics?.evals ?? [],
      test: metrics?.test ?? [],
      baselines: metrics?.baselines ?? [],
      rft: metrics?.rft ?? [],
      sftSteps: sft.length,
      ...(sft.length > 0 ? { lastSftLoss: sft[sft.length - 1]!.loss } : {}),
      ...(error ? { metricsError: error } : {}),
      related: related.filter((r): r is string => r !== undefined),
    };
  }

  /**
   * The global step RL started from (the run state's rlStart: trainingRun saves it), or undefined
   * for runs that keep none (Plan/Act jobs, the RFT branch).
   */
  async rlStartStep(runId: string): Promise<number | undefined> {
    const ref = await this.store.getName(names.runState(runId));
    if (!ref) return undefined;
    try {
      return (await getJson<RunState>(this.store, ref)).rlStart?.step;
    } catch (err) {
      throw asViewerError(err, `the saved state of run '${runId}'`);
    }
  }

  /** The record of global step `step`. */
  async record(runId: string, step: number): Promise<RolloutRecord> {
    const ref = await this.store.getName(names.rolloutRecord(runId, step));
    if (!ref) throw notFound(`run '${runId}' has no rollout record at step ${step}`);
    let record: RolloutRecord;
    try {
      record = await getJson<RolloutRecord>(this.store, ref);
    } catch (err) {
      throw asViewerError(err, `the rollout record of step ${step}`);
    }
    if (record.version !== 1 || !Array.isArray(record.sets) || !Array.isArray(record.credit)) {
      throw new ViewerError(502, 'blob-unreadable', `the rollout record of step ${step} is not a version-1 record`);
    }
    return record;
  }

  /** The RL step of the update at global step `step`, and whether it is the metrics file's (rlStart known). */
  async rlStep(runId: string, step: number): Promise<{ rlStep: number; rlStepKnown: boolean }> {
    const [steps, rlStart] = await Promise.all([this.recordedSteps(runId), this.rlStartStep(runId)]);
    return { rlStep: rlStepOf(step, steps.indexOf(step), rlStart), rlStepKnown: rlStart !== undefined };
  }

  /**
   * Dual mode: the episode's samples of the roles this record does not hold, from its rollout
   * session's record (none for other rollouts, or sessions recorded before session records).
   */
  async partnerSamples(record: RolloutRecord, episodeId: string): Promise<PartnerSamples[]> {
    const sessionId = sessionOfEpisode(episodeId);
    if (sessionId === undefined) return [];
    const ref = await this.store.getName(names.sessionRecord(sessionId));
    if (!ref) return [];
    let session: SessionRecord;
    try {
      session = await getJson<SessionRecord>(this.store, ref);
    } catch (err) {
      throw asViewerError(err, `the session record of ${sessionId}`);
    }
    const own = new Set(record.sets.map((s) => s.ref.sha256));
    const out: PartnerSamples[] = [];
    for (const role of ['planner', 'actor'] as const) {
      const set = session.samples[role];
      const job = session.jobs[role];
      if (!set || !job || own.has(set.ref.sha256)) continue;
      const samples = await this.readSet(set.ref, `the ${role} samples of session ${sessionId}`);
      const numbered = samples.flatMap((sample, index) => (sample.metadata.episodeId === episodeId ? [{ index, sample, credit: { advantage: Number.NaN, status: 'not-kept' as const } }] : []));
      if (numbered.length > 0) out.push({ job, samples: numbered });
    }
    return out;
  }

  /**
   * An agent episode's recorded calls: the gateway records each activity attempt's agent process
   * under `<episode>#a<attempt>` (activities/agents.ts); every attempt found is shown.
   */
  async recordedCalls(episodeId: string, maxAttempts = 10): Promise<RecordedCallView[]> {
    const attempts = await Promise.all(
      Array.from({ length: maxAttempts }, async (_, i) => {
        try {
          const timelines = await readEpisodeTimelines(this.store, `${episodeId}#a${i + 1}`);
          return timelines.map((t, index): RecordedCallView => ({
            attempt: i + 1,
            index,
            agent: t.agent,
            tools: t.tools,
            messages: t.messages.map((m) => ({ author: m.author, text: m.text, tokens: m.tokenIds.length })),
          }));
        } catch (err) {
          throw asViewerError(err, `the recorded calls of attempt ${i + 1} of ${episodeId}`);
        }
      }),
    );
    return attempts.flat();
  }

  /** A chat sample's kept episode and the full-render check writeChatSamples stored for it. */
  async chatParts(episodeId: string, ref: ChatSampleRef): Promise<{ kept: KeptEpisode; check: StoredCheck }> {
    try {
      const [kept, check] = await Promise.all([getJson<KeptEpisode>(this.store, ref.episode), getJson<StoredCheck>(this.store, ref.check)]);
      if (!Array.isArray(kept?.conversation?.ids) || !Array.isArray(kept.conversation.spans) || !Array.isArray(check?.mismatches)) throw new SyntaxError('not a kept chat episode and its check');
      return { kept, check };
    } catch (err) {
      throw asViewerError(err, `the kept conversation of ${episodeId}`);
    }
  }

  private async readSet(ref: BlobRef, what: string): Promise<Sample[]> {
    const cached = this.sets.get(ref.sha256);
    if (cached) return cached.samples;
    let samples: Sample[];
    try {
      samples = await readSamples(this.store, ref);
    } catch (err) {
      throw asViewerError(err, what);
    }
    this.sets.set(ref.sha256, { samples, bytes: ref.bytes });
    this.cachedBytes += ref.bytes;
    for (const [sha, entry] of this.sets) {
      if (this.cachedBytes <= this.cacheBytes || this.sets.size === 1) break;
      this.sets.delete(sha);
      this.cachedBytes -= entry.bytes;
    }
    return samples;
  }

  /** Every sample the record names, numbered, with its credit. */
  async samples(record: RolloutRecord): Promise<NumberedSample[]> {
    const sets = await Promise.all(record.sets.map((set, i) => this.readSet(set.ref, `sample set ${i + 1} (${set.role}) of step ${record.step}`)));
    try {
      return numberSamples(record, sets.flat());
    } catch (err) {
      throw new ViewerError(502, 'blob-unreadable', (err as Error).message);
    }
  }
}
