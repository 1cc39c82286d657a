/**
 * Node ids. They are positional (`r2.1.3` = third child of the first child of root 2) so a person
 * reading the Web UI sees where a node sits, and so they are the same on every replay: no uuid,
 * no counter shared between trees.
 */

export function rootId(root: number): string {
  return `r${root}`;
}

/** Id of the k-th child (1-based) of `parentId`. */
export function childId(parentId: string, k: number): string {
  return `${parentId}.${k}`;
}
