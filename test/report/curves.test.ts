import { FONT_FAMILY } from '../../src/report/curves-spec';
import { assertTextRenders } from '../../src/report/fonts';
import {
  formatMetricsLine,
  MetricsParseError,
  NoCurvesError,
  parseMetricsJsonl,
  renderCurvesPng,
  renderCurvesSvg,
  type MetricsProblem,
} from '../../src/report';
import { legendColumns } from '../../src/report/legend-layout';
import { trailingMean } from '../../src/report/rolling-mean';
import { syntheticRunJsonl } from './synthetic-run';

function problemsOf(text: string): MetricsProblem[] {
  try {
    parseMetricsJsonl(text, 'test.jsonl');
  } catch (err) {
    expect(err).toBeInstanceOf(MetricsParseError);
    return [...(err as MetricsParseError).problems];
  }
  throw new Error('expected a MetricsParseError');
}

/** Width and height from a PNG's IHDR chunk, after checking the signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(png.toString('latin1', 12, 16)).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

const GOOD = [
  '{"kind":"sft-loss","step":10,"loss":1.92}',
  '{"kind":"eval","step":300,"phase":"sft","greedyAccuracy":0.41,"sampledAccuracy":0.33}',
  '',
  '{"kind":"rl","step":2,"meanReward":0.5,"loss":0.01,"clipFrac":0.04,"approxKl":0.002,"seconds":{"rollout":4,"train":2,"publish":0.5}}',
  '{"kind":"rl","step":1,"meanReward":0.38,"loss":null}',
  '{"kind":"baseline","label":"SFT only","accuracy":0.41,"stderr":0.03}',
].join('\n');

describe('metrics file', () => {
  it('reads every kind of line, sorted by step, null metrics as NaN', () => {
    const run = parseMetricsJsonl(GOOD);
    expect(run.sftLoss).toEqual([{ step: 10, loss: 1.92 }]);
    expect(run.evals).toEqual([{ step: 300, phase: 'sft', greedyAccuracy: 0.41, sampledAccuracy: 0.33 }]);
    expect(run.rl.map((m) => m.step)).toEqual([1, 2]);
    expect(run.rl[0]!.loss).toBeNaN();
    expect(run.rl[1]!.seconds).toEqual({ rollout: 4, train: 2, publish: 0.5 });
    expect(run.baselines).toEqual([{ label: 'SFT only', accuracy: 0.41, stderr: 0.03 }]);
  });

  it('keeps the later of two lines for the same step (a resumed run logs it again)', () => {
    const run = parseMetricsJsonl(['{"kind":"rl","step":3,"meanReward":0.1,"loss":0}', '{"kind":"rl","step":3,"meanReward":0.9,"loss":0}'].join('\n'));
    expect(run.rl).toEqual([{ step: 3, meanReward: 0.9, loss: 0 }]);
  });

  it('reads what formatMetricsLine writes, NaN included', () => {
    const text = [formatMetricsLine({ kind: 'rl', step: 0, meanReward: 0.5, loss: Number.NaN }), formatMetricsLine({ kind: 'sft-loss', step: 1, loss: 2 })].join('\n');
    const run = parseMetricsJsonl(text);
    expect(run.rl[0]!.loss).toBeNaN();
    expect(run.sftLoss).toEqual([{ step: 1, loss: 2 }]);
  });

  it('names the line and field of every malformed line', () => {
    const problems = problemsOf(
      [
        '{"kind":"rl","step":1,"meanReward":0.5,"loss":0}',
        '{"kind":"rl","step":2,"meanReward":"high","loss":0}',
        'not json',
        '{"kind":"reward","step":1}',
        '{"kind":"eval","step":1,"phase":"sft","greedyAccuracy":1.5}',
        '{"kind":"rl","step":1.5,"meanReward":0.5,"loss":0}',
        '{"kind":"rl","step":4,"meanReward":0.5,"loss":0,"clipfrac":0.1}',
        '{"kind":"rl","step":5,"meanReward":0.5,"loss":0,"seconds":{"rollout":1,"train":-2,"publish":0}}',
        '{"kind":"sft-loss","loss":1}',
        '[1,2]',
      ].join('\n'),
    );
    expect(problems).toEqual([
      expect.objectContaining({ line: 2, field: 'meanReward' }),
      expect.objectContaining({ line: 3, field: '', message: expect.stringMatching(/JSON/) }),
      expect.objectContaining({ line: 4, field: 'kind', message: expect.stringMatching(/"sft-loss"/) }),
      expect.objectContaining({ line: 5, field: 'greedyAccuracy' }),
      expect.objectContaining({ line: 6, field: 'step' }),
      expect.objectContaining({ line: 7, field: 'clipfrac' }),
      expect.objectContaining({ line: 8, field: 'seconds.train' }),
      expect.objectContaining({ line: 9, field: 'step' }),
      expect.objectContaining({ line: 10, field: '', message: expect.stringMatching(/object/) }),
    ]);
  });

  it('says the line number in the error message', () => {
    expect(() => parseMetricsJsonl('{"kind":"sft-loss","step":1,"loss":1}\n{"kind":"sft-loss","step":"x","loss":1}', 'run.jsonl')).toThrow(
      /run\.jsonl:\n {2}- line 2, field "step": /,
    );
  });
});

describe('trailingMean', () => {
  it('averages the last `window` finite values', () => {
    expect(trailingMean([1, 3, 5, Number.NaN, 7], 2)).toEqual([1, 2, 4, 5, 7]);
  });
});

describe('legendColumns', () => {
  it('keeps a legend on one row when it fits and wraps it when it does not', () => {
    const labels = ['greedy', 'sampled', 'SFT only', 'SFT + more SFT'];
    expect(legendColumns(labels, 1000, 12)).toBe(4);
    expect(legendColumns(labels, 240, 12)).toBe(2);
    expect(legendColumns(labels, 50, 12)).toBe(1);
  });
});

describe('curves picture', () => {
  const run = parseMetricsJsonl(syntheticRunJsonl());

  it('renders a PNG of exactly the requested size', async () => {
    expect(pngSize(await renderCurvesPng(run, { width: 900, height: 640 }))).toEqual({ width: 900, height: 640 });
  });

  it('defaults to 1200 x 800', async () => {
    expect(pngSize(await renderCurvesPng(run))).toEqual({ width: 1200, height: 800 });
  });

  it('draws every panel with its axis titles and series names', async () => {
    const svg = await renderCurvesSvg(run, { title: 'Synthetic run' });
    expect(svg).toMatch(/^<svg[^>]* width="1200" height="800"/);
    for (const text of [
      'Synthetic run',
      'Rollout reward',
      'Held-out accuracy',
      'Training loss',
      'RL update size',
      'RL step',
      'SFT step, then 300 + RL step',
      'held-out accuracy',
      'reward',
      'mean reward (rolling)',
      'rollout accuracy (rolling)',
      'greedy',
      'sampled',
      'SFT only',
      'SFT + more SFT',
      'SFT loss',
      'RL loss',
      'clip fraction',
      'approx. KL',
      'RL starts',
      'final',
    ]) {
      expect(svg).toContain(`>${text}</text>`);
    }
  });

  it('draws an SFT-only run without the RL panels', async () => {
    const svg = await renderCurvesSvg(parseMetricsJsonl(syntheticRunJsonl({ rlSteps: 0 })));
    expect(svg).toContain('>Held-out accuracy</text>');
    expect(svg).toContain('>SFT loss</text>');
    expect(svg).toContain('>SFT step</text>');
    expect(svg).not.toContain('Rollout reward');
    expect(svg).not.toContain('RL starts');
  });

  it('draws the asynchronous schedule (trainer idle share, mean staleness) only for a run that has one', async () => {
    const schedule = (stale: Record<string, number>) => JSON.stringify({ maxStaleness: 1, staleness: stale, droppedStale: 0, trainerIdle: 0.25, inferenceIdle: 0.1 });
    const text = [1, 2, 3].map((step) => `{"kind":"rl","step":${step},"meanReward":0.2,"loss":0.1,"schedule":${schedule(step === 1 ? { '0': 8 } : { '1': 8 })}}`).join('\n');
    const svg = await renderCurvesSvg(parseMetricsJsonl(text));
    for (const t of ['Asynchronous schedule', 'trainer idle share', 'mean staleness (versions)']) expect(svg).toContain(`>${t}</text>`);
    expect(await renderCurvesSvg(run)).not.toContain('Asynchronous schedule');
  });

  it('draws a single RL step', async () => {
    const png = await renderCurvesPng(parseMetricsJsonl('{"kind":"rl","step":0,"meanReward":0.2,"loss":0.1}'), { width: 400, height: 300 });
    expect(pngSize(png)).toEqual({ width: 400, height: 300 });
  });

  it('refuses a run with nothing to draw', async () => {
    await expect(renderCurvesPng(parseMetricsJsonl(''))).rejects.toThrow(NoCurvesError);
    await expect(renderCurvesSvg(parseMetricsJsonl('{"kind":"baseline","label":"SFT only","accuracy":0.4}'))).rejects.toThrow(/nothing to plot.*only baselines/);
  });

  it('refuses to draw when no font would render the text', () => {
    expect(() => assertTextRenders({ loadSystemFonts: false, fontFiles: [] }, FONT_FAMILY)).toThrow(/no usable font/);
  });
});
