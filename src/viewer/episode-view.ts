/** One episode's samples as timelines: prompt tokens, then response tokens with logprob, mask and advantage. */
import type { RolloutRecord } from '../contracts/rollout-record';
import type { TextTokenizer } from '../model/tokenizer-types';
import { episodeSummary, type LinkSettings, type NumberedSample } from './step-view';
import { promptPieces, responsePieces } from './tokens';
import type { ChatView, EpisodeView, SampleView } from './view-types';

/** The grid rows of a grid-world observation ("Grid:\n.#..\nA..G\nPlan 3:\n"), if the prompt ends with one. */
export function gridRows(prompt: string): string[] | undefined {
  const m = /Grid:\n((?:[.#AG]+\n)+)Plan \d+:\n$/.exec(prompt);
  return m ? m[1]!.trimEnd().split('\n') : undefined;
}

export function sampleView(record: RolloutRecord, n: NumberedSample, tok: TextTokenizer): SampleView {
  const { sample: s, credit } = n;
  const grid = s.metadata.planHorizon !== undefined ? gridRows(tok.decode(s.promptTokens)) : undefined;
  // RFT fits the correct episodes with advantage 1: tree credit on the samples was not trained.
  const perToken = record.objective === 'rft' ? undefined : s.tokenAdvantages;
  return {
    index: n.index,
    role: s.metadata.role,
    turn: s.metadata.turn,
    ...(s.metadata.actId !== undefined ? { actId: s.metadata.actId } : {}),
    ...(s.metadata.planHorizon !== undefined ? { planHorizon: s.metadata.planHorizon } : {}),
    ...(s.metadata.chunkOffset !== undefined ? { chunkOffset: s.metadata.chunkOffset } : {}),
    weightVersion: s.metadata.weightVersion,
    ...(s.metadata.weightVersions ? { weightVersions: s.metadata.weightVersions } : {}),
    staleness: record.policyVersion - s.metadata.weightVersion,
    reward: s.reward,
    advantage: credit.advantage,
    status: credit.status,
    tokenAdvantages: perToken !== undefined,
    prompt: promptPieces(tok, s.promptTokens),
    response: responsePieces(tok, s.responseTokens, s.logprobs, s.lossMask, perToken),
    ...(grid ? { grid } : {}),
  };
}

/** Dual mode: the episode's samples of the other role, trained by the partner job. */
export interface PartnerSamples {
  job: string;
  samples: readonly NumberedSample[];
}

export function episodeView(
  record: RolloutRecord,
  episodeId: string,
  samples: readonly NumberedSample[],
  tok: TextTokenizer,
  links: LinkSettings,
  partners: readonly PartnerSamples[] = [],
  chats: ReadonlyMap<number, ChatView> = new Map(),
): EpisodeView {
  const partnerViews = partners.flatMap((p) =>
    // The partner job counts its own weight versions: its samples' staleness is not this job's to tell.
    p.samples.map((n): SampleView => ({ ...sampleView(record, n, tok), advantage: null, staleness: null, status: 'partner', partnerJob: p.job })),
  );
  return {
    runId: record.runId,
    step: record.step,
    episodeId,
    summary: episodeSummary(record, episodeId, samples, tok, links),
    samples: [
      ...samples.map((n) => {
        const chat = chats.get(n.index);
        return chat ? { ...sampleView(record, n, tok), chat } : sampleView(record, n, tok);
      }),
      ...partnerViews,
    ],
  };
}
