/**
 * Orchestration-queue activities that keep a training run's records outside its history:
 *  - the run state after every SFT chunk and RL step, in the blob store, so a terminated run can be
 *    started again from where it was (`bash scripts/main.sh --resume <workflow id>`);
 *  - one JSON line per SFT step, evaluation and RL step in the run's metrics file (the format of
 *    src/report/run-metrics.ts), for people and for the curves picture, rendered next to it.
 * Both are idempotent: a retried or repeated write leaves the same records.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { getJson, putJson, type BlobStore } from '../src/store/blob-store';
import type { BlobRef } from '../src/domain/types';
import type { RunState } from '../src/contracts/training-run';
import type { SessionRecord } from '../src/contracts/rollout-record';
import { formatMetricsLine, metricsLineKey, parseMetricsJsonl, renderCurvesPng, type MetricsLine } from '../src/report';
import { names, runKey } from '../src/store/run-names';

export interface AppendMetricsInput {
  runId: string;
  lines: MetricsLine[];
}

export function metricsFilePath(runsDir: string, runId: string): string {
  return path.join(runsDir, runKey(runId), 'metrics.jsonl');
}

export function createRunRecordActivities({ store, runsDir }: { store: BlobStore; runsDir: string }) {
  return {
    async saveRunState(input: { runId: string; state: RunState }): Promise<void> {
      await store.setName(names.runState(input.runId), await putJson(store, input.state, 'run-state'));
    },

    /**
     * Ties the blobs named after this workflow id to one config: the first run under the id records
     * its config's fingerprint, and a later run under the same id with another config is refused
     * before it could read the first run's checkpoints or cached results.
     */
    async claimRunId(input: { runId: string; configHash: string }): Promise<void> {
      const mine = await putJson(store, { configHash: input.configHash }, 'run-config-hash');
      const held = await store.nameIfAbsent(names.runConfig(input.runId), mine);
      if (held.sha256 !== mine.sha256) {
        const { configHash } = await getJson<{ configHash: string }>(store, held);
        throw ApplicationFailure.nonRetryable(
          `workflow id '${input.runId}' was used by a run with another config or other starting weights (${configHash}, this one ${input.configHash}), whose checkpoints and results are stored under it: start this one under another workflow id`,
          'ConfigError',
        );
      }
    },

    /**
     * The state saved by the last SFT chunk or RL step of run `runId`. claimRunId, which runs first,
     * has already refused a config other than the one the state was made with.
     */
    async loadRunState(input: { runId: string }): Promise<RunState> {
      const ref = await store.getName(names.runState(input.runId));
      if (!ref) throw ApplicationFailure.nonRetryable(`no saved state for run '${input.runId}': nothing to resume`, 'BadInputError');
      return getJson<RunState>(store, ref);
    },

    /** A dual-mode session's sample sets of both roles, for the rollout viewer (named once; a retry writes the same bytes). */
    async recordSession(record: SessionRecord): Promise<void> {
      await store.nameIfAbsent(names.sessionRecord(record.sessionId), await putJson(store, record, 'session-record'));
    },

    /** Appends the lines whose keys the file does not hold yet; returns the file's path. */
    async appendMetrics(input: AppendMetricsInput): Promise<string> {
      const file = metricsFilePath(runsDir, input.runId);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const existing = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return '';
        throw err;
      });
      const keys = new Set<string>();
      const valid: string[] = [];
      for (const line of existing.split('\n')) {
        if (!line.trim()) continue;
        try {
          keys.add(metricsLineKey(JSON.parse(line) as MetricsLine));
          valid.push(line);
        } catch {
          // A torn line from a crash mid-write: dropped below, and its record written again.
        }
      }
      const fresh = input.lines.filter((l) => !keys.has(metricsLineKey(l))).map(formatMetricsLine);
      if (valid.length < existing.split('\n').filter((l) => l.trim()).length) {
        // Rewrite whole (temp file + rename) so readers never see the torn line again.
        const tmp = `${file}.${process.pid}.tmp`;
        await fs.writeFile(tmp, [...valid, ...fresh].map((l) => `${l}\n`).join(''));
        await fs.rename(tmp, file);
      } else if (fresh.length > 0) {
        await fs.appendFile(file, fresh.map((l) => `${l}\n`).join(''));
      }
      return file;
    },

    /**
     * Renders the run's curves from its metrics file next to it (curves.png), and into the blob store
     * (pngRef: what a tracked run uploads to MLflow); safe to call while the run goes on.
     */
    async renderCurves(input: { runId: string; title: string }): Promise<{ metricsFile: string; png: string; pngRef: BlobRef }> {
      const file = metricsFilePath(runsDir, input.runId);
      const text = await fs.readFile(file, 'utf8');
      const png = await renderCurvesPng(parseMetricsJsonl(text, file), { title: input.title });
      const out = path.join(path.dirname(file), 'curves.png');
      const tmp = `${out}.${process.pid}.tmp`;
      await fs.writeFile(tmp, png);
      await fs.rename(tmp, out);
      return { metricsFile: file, png: out, pngRef: await store.put(png, 'curves-png') };
    },
  };
}

export type RunRecordActivities = ReturnType<typeof createRunRecordActivities>;
