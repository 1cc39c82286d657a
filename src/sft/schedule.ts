/** Learning rate at a 1-based step: linear warm-up, then cosine decay to 10% of the base rate. */
export function learningRateAt(step: number, totalSteps: number, baseLr: number, warmupSteps: number): number {
  if (warmupSteps > 0 && step <= warmupSteps) return (baseLr * step) / warmupSteps;
  const span = Math.max(1, totalSteps - warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - warmupSteps) / span));
  return baseLr * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * progress)));
}
