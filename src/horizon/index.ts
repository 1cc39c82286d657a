export * from './assign';
export * from './plan';
export * from './reward';
export * from './metrics';
export * from './episode';
