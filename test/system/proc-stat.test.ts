import { parseProcStat, readProcStat } from '../../src/system/proc-stat';

// A real line's shape (from `cat /proc/self/stat`), with a command name holding ") " and spaces.
const line = (comm: string) =>
  `4242 (${comm}) S 1 4242 4242 0 -1 4194560 1180 0 0 0 37 12 0 0 20 0 11 0 987654 1226346496 12345 18446744073709551615 1 1 0 0 0 0 0 4096 134234626 0 0 0 17 1 0 0 0 0 0\n`;

test('fields are counted after the last parenthesis of the command name', () => {
  for (const comm of ['node', 'a) b', 'we(i)rd) R 9 9']) {
    expect(parseProcStat(line(comm))).toEqual({ state: 'S', utimeTicks: 37, stimeTicks: 12, startTicks: '987654' });
  }
});

test('a line that is not a stat line is refused, naming it', () => {
  expect(() => parseProcStat('hello')).toThrow(/not a \/proc\/<pid>\/stat line: "hello"/);
  expect(() => parseProcStat('1 (x) S 1 2')).toThrow(/not a \/proc\/<pid>\/stat line/);
});

test('this process reads as running with CPU time; a pid that does not exist reads as gone', () => {
  const self = readProcStat(process.pid)!;
  expect(self.state).toMatch(/^[RS]$/);
  expect(self.utimeTicks + self.stimeTicks).toBeGreaterThan(0);
  expect(readProcStat(2 ** 22 + 1)).toBeUndefined();
});
