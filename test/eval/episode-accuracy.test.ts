/** evaluateEpisodeAccuracy with a policy per role (dual mode's joint evaluation), on scripted engines. */
import type { CompletionSource } from '../../src/eval/arith-eval';
import { evaluateEpisodeAccuracy } from '../../src/eval/episode-accuracy';
import { oracleCompletion } from '../../activities/oracle-inference';
import type { GenerateInput } from '../../activities/inference';

/** The oracle's answers, recording which prompts reached this engine. */
function scripted(prompts: string[], wrongActs = false): CompletionSource {
  return {
    async complete(prompt, params) {
      prompts.push(prompt);
      const role = prompt.startsWith('Compute:') ? 'planner' : 'actor';
      const c = await oracleCompletion({ prompt, role, params } as unknown as GenerateInput);
      // A lazy actor answers 0 at once instead of calling the calculator.
      const lazy = wrongActs && role === 'actor';
      return { text: lazy ? '0' : c.text, finishReason: lazy ? 'eos' : c.finishReason, promptTokens: 0, responseTokens: 0, weightVersion: 0 } as unknown as Awaited<ReturnType<CompletionSource['complete']>>;
    },
  };
}

const opts = {
  seed: 3,
  problems: 6,
  difficulty: { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2, operators: ['+'] as Array<'+'> },
  limits: { maxTurns: 4, maxActsPerTurn: 4, maxToolCallsPerAct: 2 },
  maxNewTokens: 48,
  scheme: 'subproblem' as const,
  part: 'test' as const,
};

test('each role is played by its own engine; one engine plays both when given one', async () => {
  const plannerPrompts: string[] = [];
  const actorPrompts: string[] = [];
  const joint = await evaluateEpisodeAccuracy({ planner: scripted(plannerPrompts), actor: scripted(actorPrompts) }, opts);
  expect(joint.greedy).toMatchObject({ correct: 6, total: 6 });
  expect(plannerPrompts.length).toBeGreaterThan(0);
  expect(plannerPrompts.every((p) => p.startsWith('Compute:'))).toBe(true);
  expect(actorPrompts.length).toBeGreaterThan(0);
  expect(actorPrompts.every((p) => p.startsWith('Evaluate:'))).toBe(true);
  expect(joint.perProblem).toBe('111111');
  expect(joint.tools).toMatchObject({ actToolRate: 1 });
  // A lazy actor with the same planner: no act calls the calculator; only the actor's engine changed.
  const lazy = await evaluateEpisodeAccuracy({ planner: scripted([]), actor: scripted([], true) }, opts);
  expect(lazy.tools).toMatchObject({ actToolRate: 0 });
  expect(lazy.tools!.acts).toBe(joint.tools!.acts);
  const both: string[] = [];
  const shared = await evaluateEpisodeAccuracy(scripted(both), opts);
  expect(shared.greedy.correct).toBe(6);
  expect(both.length).toBe(plannerPrompts.length + actorPrompts.length);
});
