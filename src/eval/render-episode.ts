import type { EpisodeResult } from '../planact';
import type { ArithProblem } from '../tasks/arith';

/** A short human-readable account of one episode, for the Web UI and the main job's output. */
export function renderEpisode(problem: ArithProblem, e: EpisodeResult): string {
  const lines = [`${problem.expression} = ${problem.answer} → ${e.finalAnswer ?? '(no answer)'} (reward ${e.reward})`];
  for (const t of e.turns) {
    lines.push(`  turn ${t.turn}: ${JSON.stringify(t.planText)}`);
    for (const a of t.acts) lines.push(`    act ${a.id} ${a.expression} → ${a.result ?? a.failure?.code ?? '?'} (${a.toolCalls} calc)`);
  }
  if (e.failure) lines.push(`  failed: ${e.failure.code}: ${e.failure.message}`);
  return lines.join('\n');
}
