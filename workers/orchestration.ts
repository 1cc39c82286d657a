import { main } from './main';

main(['orchestration']);
