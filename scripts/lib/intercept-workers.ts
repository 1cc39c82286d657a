/**
 * For test and benchmark builds of the production worker process: adds an activity interceptor to
 * every worker the process creates from now on (the freezing worker of the crash tests, the faulty
 * worker of bench:chaos), without a flag in the production code.
 */
import { Worker, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';

export function interceptEveryWorker(factory: ActivityInterceptorsFactory): void {
  const create = Worker.create.bind(Worker);
  Worker.create = (options: WorkerOptions) =>
    create({ ...options, interceptors: { ...options.interceptors, activity: [...(options.interceptors?.activity ?? []), factory] } });
}
