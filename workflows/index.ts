/** Every workflow the orchestration worker registers. */
export { trainingRun } from './training-run';
