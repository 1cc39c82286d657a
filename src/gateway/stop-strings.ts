/**
 * Stop strings as OpenAI and vLLM return them: the text ends before the first stop string the
 * output contains (or right after it with vLLM's include_stop_str_in_output), never with the rest of
 * the token that completed it. The engine's text is whole tokens, so it may run past the stop.
 */
export interface StopCut {
  text: string;
  /** The stop string that ended the text, or undefined when none occurs in it. */
  matched?: string;
}

/** The text cut at the earliest occurrence of any of `stops` (ties: the longer string). */
export function cutAtStop(text: string, stops: readonly string[], keepStop = false): StopCut {
  let at = -1;
  let matched: string | undefined;
  for (const s of stops) {
    if (s === '') continue;
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at || (i === at && s.length > (matched?.length ?? 0)))) {
      at = i;
      matched = s;
    }
  }
  if (matched === undefined) return { text };
  return { text: text.slice(0, at + (keepStop ? matched.length : 0)), matched };
}
