export * from './actor-parser';
export * from './episode';
export * from './episode-types';
export * from './error-message';
export * from './plan-parser';
export * from './protocol';
export * from './task';
export { runAct, type ActContext, type ActOutcome } from './actor-loop';
