/**
 * The layering and the absence of cycles, read from the imports themselves (TypeScript's scanner):
 * src/ below activities/ and workflows/, below workers/; activities import workflows' shared
 * definitions only, workflows import activities as types only; no cycle between files, and none
 * between src/ capabilities (type-only imports included: they are dependencies a reader follows).
 */
import { capabilityOf, cycles, importsOf, layerViolations, sourceFiles, type ImportEdge } from '../helpers/import-graph';

const edges = sourceFiles(['src', 'activities', 'workflows', 'workers']).flatMap(importsOf);

test('no import goes up a layer', () => {
  expect(edges.length).toBeGreaterThan(300);
  expect(layerViolations(edges)).toEqual([]);
});

test('no import cycle between files', () => {
  expect(cycles(edges)).toEqual([]);
});

test('no import cycle between capabilities of src/', () => {
  expect(cycles(edges.filter((e) => e.from.startsWith('src/') && e.to.startsWith('src/')), capabilityOf)).toEqual([]);
});

test('the checks see an added upward import and an added cycle', () => {
  const added: ImportEdge[] = [
    { from: 'src/model/gpt.ts', to: 'activities/training.ts', typeOnly: true },
    { from: 'activities/samples.ts', to: 'workflows/training-run/workflow.ts', typeOnly: true },
    { from: 'workflows/training-run/workflow.ts', to: 'activities/training.ts', typeOnly: false },
    { from: 'src/rl/trainer.ts', to: 'src/model/gpt.ts', typeOnly: false },
    { from: 'src/model/gpt.ts', to: 'src/rl/trainer.ts', typeOnly: true },
  ];
  expect(layerViolations(added)).toHaveLength(3);
  expect(cycles(added)).toEqual([['src/model/gpt.ts', 'src/rl/trainer.ts']]);
  expect(cycles(added, capabilityOf)).toContainEqual(['src/model', 'src/rl']);
});
