import { main } from './main';

main(['tools']);
