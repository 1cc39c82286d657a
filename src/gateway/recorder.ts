/**
 * Recorded gateway timelines in the blob store: each under `gateway/episodes/<episode>/<seq>`, in
 * the order the gateway served them (capture order matters to the drift repair), so an agent
 * episode's calls can be read back, merged and trained on.
 */
import { getJson, putJson, type BlobStore } from '../store/blob-store';
import type { Timeline } from '../timeline/types';
import type { TimelineRecorder } from './server';

function episodeKey(episode: string): string {
  return episode.replace(/[^A-Za-z0-9._-]/g, '_');
}

export function episodePrefix(episode: string): string {
  return `gateway/episodes/${episodeKey(episode)}/`;
}

/** A recorder numbering each episode's timelines in arrival order (one gateway process per store). */
export function blobStoreRecorder(store: BlobStore): TimelineRecorder {
  const next = new Map<string, number>();
  return async (episode, timeline) => {
    const key = episodeKey(episode);
    const seq = next.get(key) ?? (await store.listNames(episodePrefix(episode))).length;
    next.set(key, seq + 1);
    const ref = await putJson(store, timeline, 'timeline');
    await store.setName(`${episodePrefix(episode)}${String(seq).padStart(6, '0')}`, ref);
  };
}

/** An episode's recorded timelines, in the order they were served. */
export async function readEpisodeTimelines(store: BlobStore, episode: string): Promise<Timeline[]> {
  const names = (await store.listNames(episodePrefix(episode))).sort();
  const out: Timeline[] = [];
  for (const name of names) out.push(await getJson<Timeline>(store, (await store.getName(name))!));
  return out;
}
