import { main } from './main';

main(['training']);
