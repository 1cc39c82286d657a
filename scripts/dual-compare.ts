/**
 * The dual-mode comparison (issue 24, docs/plan-act.md): from one main-job run's SFT checkpoint,
 *   - shared mode: one planActJob playing both roles,
 *   - dual mode, outcome credit: a planner job and an actor job (rollout.plannerCredit outcome),
 *   - dual mode, planner credit: the same with rollout.plannerCredit: correct-results,
 * each trained for the main job's RL budget (rl.steps rollouts of rl.promptsPerStep x rl.groupSize
 * episodes, the main job's rl.* settings), then every pairing judged alike by jointEvaluation on the
 * main job's test problems: both trained policies, the frozen-planner controls (the SFT planner with
 * each trained actor), shared mode, and SFT alone. Writes .data/dual-compare/<from-run>.json; with
 * several runs given, prints each arm's mean over them and the paired differences, with the main
 * job's own RL, RFT, filtered SFT and more SFT beside them (scripts/lib/dual-summary.ts).
 *   node dist/scripts/dual-compare.js --from-run <main-job id>      (its config: <runs>/<id>.input.json)
 *   node dist/scripts/dual-compare.js --summarize <main-job id>,<main-job id>,...
 * Workers run in-process against TEMPORAL_ADDRESS or the dev server on :7233 (as the main job).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { parseRunConfig } from '../src/config/parse';
import type { PlanActJobInput } from '../src/contracts/plan-act-job';
import type { RunState, TrainingRunResult } from '../src/contracts/training-run';
import { getJson } from '../src/store/blob-store';
import type { WeightsInfo } from '../src/contracts/weights';
import { names } from '../src/store/run-names';
import { DATA_DIR } from '../src/paths';
import { createWorkers, defaultRunsDir, defaultStore } from '../workers/create-workers';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { JointEvaluationInput, JointEvaluationResult } from '../workflows/joint-evaluation';
import { ensureServer } from './lib/local-server';
import { runMain } from './lib/run-main';
import { evaluationConfig, jobConfig } from './lib/dual-configs';
import { ARMS, type Arm, type ArmResult, type CompareFile, mainJobArms, summarizeDual } from './lib/dual-summary';

const OUT_DIR = path.join(DATA_DIR, 'dual-compare');

async function compare(fromRun: string): Promise<CompareFile> {
  // The config the main job ran with (its seed included), as main.ts wrote it beside its metrics.
  const configFile = path.join(defaultRunsDir(), `${fromRun}.input.json`);
  if (!fs.existsSync(configFile)) throw new Error(`no ${configFile}: give a run started by scripts/main.sh (DURABLE_RL_RUNS names another runs folder)`);
  const base = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  const parsed = parseRunConfig(base, configFile);
  const store = defaultStore();
  // The checkpoint the main job's RL started from (its saved state says which).
  const stateRef = await store.getName(names.runState(fromRun));
  const fromStep = stateRef ? (await getJson<RunState>(store, stateRef)).rlStart?.step : undefined;
  if (fromStep === undefined) throw new Error(`run ${fromRun} saved no RL start in the blob store (did it reach RL?)`);
  const rollouts = parsed.rl.steps;
  const rolloutIds = Array.from({ length: rollouts }, (_, i) => i + 1);

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await ensureServer();
  const native = await NativeConnection.connect({ address: server.address });
  const workers = await createWorkers({ connection: native, queues: ['orchestration', 'inference', 'training', 'tools'], store });
  const running = workers.map((w) => w.run());
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const t0 = Date.now();
  try {
    const tag = `${fromRun}-dual-cmp`;
    const start = (id: string, input: PlanActJobInput) => client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [input] });
    const job = (role: PlanActJobInput['role'], experiment: string, credit: boolean): PlanActJobInput => ({
      role,
      config: jobConfig(base, experiment, role, credit),
      rolloutIds,
      weightsFromRun: fromRun,
      fromStep,
    });
    const jobs = {
      shared: `${tag}-shared`,
      outcomePlanner: `${tag}-outcome-planner`,
      outcomeActor: `${tag}-outcome-actor`,
      creditPlanner: `${tag}-credit-planner`,
      creditActor: `${tag}-credit-actor`,
    };
    // Job ids name their weights in the store: a second comparison under them would play the first one's weights.
    for (const id of Object.values(jobs)) {
      if (await store.getName(names.weights(id, 0))) throw new Error(`${id} has published weights already (an earlier comparison of ${fromRun}); its results are in ${OUT_DIR}`);
    }
    console.log(`training 5 jobs for ${rollouts} rollouts from ${fromRun} step ${fromStep}: ${Object.values(jobs).join(', ')}`);
    const handles = await Promise.all([
      start(jobs.shared, job('shared', `${tag}-shared`, false)),
      start(jobs.outcomePlanner, job('planner', `${tag}-outcome`, false)),
      start(jobs.outcomeActor, job('actor', `${tag}-outcome`, false)),
      start(jobs.creditPlanner, job('planner', `${tag}-credit`, true)),
      start(jobs.creditActor, job('actor', `${tag}-credit`, true)),
    ]);
    // fallbackOnTimeout is off: a job whose partner does not come fails instead of training alone.
    try {
      await Promise.all(handles.map((h) => h.result()));
    } catch (err) {
      // The others would wait for partners that are gone: stop them with the comparison.
      await Promise.allSettled(handles.map((h) => h.terminate('dual-compare: another job of the comparison failed')));
      throw err;
    }
    console.log(`trained in ${((Date.now() - t0) / 1000).toFixed(0)} s; judging ${ARMS.length} pairings on the test problems`);

    // The SFT policy: the weights every job published before its first update (version 0).
    const ref = await store.getName(names.weights(jobs.outcomePlanner, 0));
    if (!ref) throw new Error(`${jobs.outcomePlanner} published no version 0`);
    const sft: WeightsInfo = { version: 0, step: fromStep, onnx: ref };
    const from = (run: string) => ({ fromRun: run });
    const pairings: Record<Arm, Pick<JointEvaluationInput, 'planner' | 'actor'>> = {
      sft: { planner: { weights: sft }, actor: { weights: sft } },
      shared: { planner: from(jobs.shared), actor: from(jobs.shared) },
      dualOutcome: { planner: from(jobs.outcomePlanner), actor: from(jobs.outcomeActor) },
      dualCredit: { planner: from(jobs.creditPlanner), actor: from(jobs.creditActor) },
      frozenPlannerOutcome: { planner: { weights: sft }, actor: from(jobs.outcomeActor) },
      frozenPlannerCredit: { planner: { weights: sft }, actor: from(jobs.creditActor) },
    };
    const evalConfig = evaluationConfig(base, `${tag}-joint`, 'dual', false);
    const judged = await Promise.all(
      ARMS.map(async (arm) => {
        const r = (await client.workflow.execute('jointEvaluation', {
          taskQueue: TASK_QUEUES.orchestration,
          workflowId: `${tag}-joint-${arm}`,
          args: [{ config: evalConfig, ...pairings[arm], part: 'test' } satisfies JointEvaluationInput],
        })) as JointEvaluationResult;
        const planner = 'fromRun' in pairings[arm].planner ? pairings[arm].planner.fromRun : 'sft';
        const actor = 'fromRun' in pairings[arm].actor ? pairings[arm].actor.fromRun : 'sft';
        const out: ArmResult = {
          planner,
          actor,
          greedy: r.greedy.accuracy,
          stderr: r.greedy.stderr,
          ...(r.sampled ? { sampled: r.sampled.accuracy } : {}),
          ...(r.passAtK ? { passAtK: r.passAtK } : {}),
          ...(r.tools ? { actToolRate: r.tools.actToolRate } : {}),
          perProblem: r.perProblem!,
        };
        return [arm, out] as const;
      }),
    );
    return { fromRun, fromStep, rollouts, jobs, arms: Object.fromEntries(judged) as Record<Arm, ArmResult>, seconds: Math.round((Date.now() - t0) / 1000) };
  } finally {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all(running);
  }
}

/** The table, with the main job's own policies beside the pairings when its result file is in the runs folder. */
function summarize(files: CompareFile[]): string {
  const mains = files.map((f) => {
    const file = path.join(defaultRunsDir(), `${f.fromRun}.result.json`);
    if (!fs.existsSync(file)) return undefined;
    return mainJobArms(f, (JSON.parse(fs.readFileSync(file, 'utf8')) as TrainingRunResult).comparison, file);
  });
  return summarizeDual(files, mains);
}

async function main(): Promise<number> {
  const opts = new Command()
    .option('--from-run <id>', "a main-job run: the jobs start from its SFT checkpoint")
    .option('--summarize <ids>', 'comma-separated main-job runs already compared: print the table')
    .parse()
    .opts<{ fromRun?: string; summarize?: string }>();
  fs.mkdirSync(OUT_DIR, { recursive: true });
  if (opts.summarize) {
    const files = opts.summarize.split(',').map((id) => JSON.parse(fs.readFileSync(path.join(OUT_DIR, `${id}.json`), 'utf8')) as CompareFile);
    console.log(summarize(files));
    return 0;
  }
  if (!opts.fromRun) {
    console.error('give --from-run <main-job id> (or --summarize <ids>)');
    return 2;
  }
  const result = await compare(opts.fromRun);
  const file = path.join(OUT_DIR, `${opts.fromRun}.json`);
  fs.writeFileSync(file, JSON.stringify(result, null, 2));
  try {
    console.log(summarize([result]));
  } catch (err) {
    // The comparison is written: a main job that cannot be paired with it must not fail the caller
    // (dual-compare-seeds.sh goes on to the next seed); --summarize refuses it.
    console.warn(`without the main job's policies: ${(err as Error).message}`);
    console.log(summarizeDual([result], [undefined]));
  }
  console.log(`\nwritten ${path.relative(process.cwd(), file)} (${result.seconds} s)`);
  return 0;
}

runMain(main);
