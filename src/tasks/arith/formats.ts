/** The arithmetic task's own prompts; the Plan/Act protocol around them lives in src/planact/protocol. */

/** "Compute: 17+25+8+31\n" */
export function arithPlannerPrompt(expression: string): string {
  return `Compute: ${expression}\n`;
}

/** "Evaluate: 17+25\n" */
export function arithActorPrompt(expression: string): string {
  return `Evaluate: ${expression}\n`;
}
