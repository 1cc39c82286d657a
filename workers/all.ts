/** Hosts every task queue in one process: the embedded default on one machine. */
import { main } from './main';

main(['orchestration', 'inference', 'training', 'tools']);
