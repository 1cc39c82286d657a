import { main } from './main';

main(['inference']);
