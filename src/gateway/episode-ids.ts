/** Episode ids of the x-episode-id header: what is accepted, and the store key each one gets. */
import { createHash } from 'node:crypto';
import { GatewayError } from './errors';

/** Longest episode id accepted, in characters. */
export const MAX_EPISODE_ID = 200;

/**
 * An episode id as the x-episode-id header carries it: 1 to 200 characters, no control characters.
 * Throws a 400 naming the header otherwise.
 */
export function checkEpisodeId(episode: string | string[]): void {
  const bad = (why: string): never => {
    throw new GatewayError(400, `x-episode-id ${why}`, 'invalid_request_error', 'x-episode-id', 'invalid_episode_id');
  };
  if (typeof episode !== 'string') return bad('must be given once');
  if (episode.length > MAX_EPISODE_ID) bad(`is ${episode.length} characters; at most ${MAX_EPISODE_ID}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(episode)) bad('contains a control character');
}

/**
 * The store key of an episode, one per id: an id of letters, digits, '_' and '-' (up to 100) is its
 * own key; any other id (with '/', '.', spaces, non-ASCII, or longer) is 'sha256.' and its hash ('.' is
 * not in the plain alphabet, so the two kinds never meet): `col/1`, `col_1` and `col 1` stay apart and
 * `..` never reaches a path.
 */
export function episodeKey(episode: string): string {
  return /^[A-Za-z0-9_-]{1,100}$/.test(episode) ? episode : `sha256.${createHash('sha256').update(episode, 'utf8').digest('hex')}`;
}
