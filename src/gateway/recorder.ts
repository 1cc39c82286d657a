/**
 * Recorded gateway timelines in the blob store: each under `gateway/episodes/<episode>/<seq>`, in
 * the order the gateway served them (capture order matters to the drift repair), so an agent
 * episode's calls can be read back, merged and trained on.
 */
import { getJson, putJson, type BlobStore } from '../store/blob-store';
import { episodeKey } from './episode-ids';
import type { Timeline } from '../timeline/types';
import type { TimelineRecorder } from './server';

export function episodePrefix(episode: string): string {
  return `gateway/episodes/${episodeKey(episode)}/`;
}

/**
 * A recorder numbering each episode's timelines in the order they were served. Calls of one episode
 * are recorded one after another (a queue per episode), so concurrent calls each get their own
 * number instead of all reading "none yet" and overwriting one another; a number already taken in
 * the store (another recorder on it, or an earlier process) is never overwritten but skipped.
 */
export function blobStoreRecorder(store: BlobStore): TimelineRecorder {
  const next = new Map<string, number>();
  const queues = new Map<string, Promise<void>>();
  const write = async (episode: string, timeline: Timeline): Promise<void> => {
    const key = episodeKey(episode);
    const ref = await putJson(store, timeline, 'timeline');
    let seq = next.get(key) ?? (await store.listNames(episodePrefix(episode))).length;
    for (;;) {
      const name = `${episodePrefix(episode)}${String(seq).padStart(6, '0')}`;
      const held = await store.nameIfAbsent(name, ref);
      if (held.sha256 === ref.sha256) break;
      seq += 1;
    }
    next.set(key, seq + 1);
  };
  return (episode, timeline) => {
    const key = episodeKey(episode);
    const queued = (queues.get(key) ?? Promise.resolve()).then(() => write(episode, timeline));
    // The queue goes on after a failed write (that call reports its own error); it is dropped once idle.
    const tail = queued.catch(() => undefined);
    queues.set(key, tail);
    void tail.then(() => {
      if (queues.get(key) === tail) queues.delete(key);
    });
    return queued;
  };
}

/** An episode's recorded timelines, in the order they were served. */
export async function readEpisodeTimelines(store: BlobStore, episode: string): Promise<Timeline[]> {
  const names = (await store.listNames(episodePrefix(episode))).sort();
  const out: Timeline[] = [];
  for (const name of names) out.push(await getJson<Timeline>(store, (await store.getName(name))!));
  return out;
}
