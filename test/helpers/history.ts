/** Reads what a person would see in the Web UI: every payload of a history, decoded. */
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

export function historyPayloads(history: History): Array<{ event: string; bytes: number; value: unknown }> {
  const out: Array<{ event: string; bytes: number; value: unknown }> = [];
  for (const event of history.events ?? []) {
    const label = String(event.eventType ?? '?');
    visit(event, (payload) => {
      // A void result (binary/null encoding) carries no data at all.
      const data = payload.data instanceof Uint8Array ? payload.data : new Uint8Array();
      let value: unknown;
      try {
        value = JSON.parse(new TextDecoder().decode(data));
      } catch {
        value = undefined;
      }
      out.push({ event: label, bytes: data.byteLength, value });
    });
  }
  return out;
}

function visit(node: unknown, onPayload: (p: { data?: Uint8Array | null }) => void): void {
  if (node === null || typeof node !== 'object') return;
  if (node instanceof Uint8Array) return;
  const obj = node as Record<string, unknown>;
  if (Array.isArray(obj.payloads)) {
    for (const p of obj.payloads) onPayload(p as { data?: Uint8Array | null });
  }
  for (const [k, v] of Object.entries(obj)) if (k !== 'payloads') visit(v, onPayload);
}

/** The first argument of every `activityType` activity the history scheduled, decoded, in order. */
export function scheduledInputs<T>(history: History, activityType: string): T[] {
  return (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    return a?.activityType?.name === activityType ? [JSON.parse(new TextDecoder().decode(a.input!.payloads![0]!.data!)) as T] : [];
  });
}

/** Longest array of numbers anywhere in a value: raw token arrays would show up here. */
export function longestNumberArray(value: unknown): number {
  if (Array.isArray(value)) {
    const own = value.every((x) => typeof x === 'number') ? value.length : 0;
    return Math.max(own, ...value.map(longestNumberArray));
  }
  if (value && typeof value === 'object') return Math.max(0, ...Object.values(value).map(longestNumberArray));
  return 0;
}

/** Every activity the history scheduled, in order: its type, first argument and (once completed) result, decoded. */
export function recordedActivities(history: History): Array<{ type: string; input: unknown; result?: unknown }> {
  const decode = (p: { data?: Uint8Array | null } | undefined): unknown => (p?.data ? JSON.parse(new TextDecoder().decode(p.data)) : undefined);
  const results = new Map<string, unknown>();
  for (const e of history.events ?? []) {
    const c = e.activityTaskCompletedEventAttributes;
    if (c) results.set(String(c.scheduledEventId), decode(c.result?.payloads?.[0]));
  }
  return (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    return a ? [{ type: a.activityType!.name!, input: decode(a.input?.payloads?.[0]), result: results.get(String(e.eventId)) }] : [];
  });
}

/** Every activity task the history started: its type, attempt and input (its payloads' text), in order. */
export function activityStarts(history: History): Array<{ type: string; attempt: number; input: string }> {
  const events = history.events ?? [];
  const scheduled = new Map(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e.activityTaskScheduledEventAttributes]] : [])));
  return events.flatMap((e) => {
    const a = e.activityTaskStartedEventAttributes;
    const s = a && scheduled.get(String(a.scheduledEventId));
    if (!a || !s) return [];
    const input = (s.input?.payloads ?? []).map((p) => Buffer.from(p.data ?? new Uint8Array()).toString()).join('');
    return [{ type: s.activityType?.name ?? '', attempt: a.attempt ?? 1, input }];
  });
}

/** The type of every activity the history scheduled, in order. */
export function scheduledActivityTypes(history: History): Array<string | null | undefined> {
  return (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
}
