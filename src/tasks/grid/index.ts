export * from './layout';
export * from './moves';
export * from './oracle';
export * from './env';
export * from './formats';
export * from './sft';
