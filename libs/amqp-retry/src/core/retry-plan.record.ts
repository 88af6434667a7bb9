/**
 * What a start leaves in the handler's plan queue (`Q.retry.plan`): the tier queues it applied, and the tiers of
 * earlier configurations that are not deleted yet because they still held messages.
 */
export interface RetryPlanRecord {
  tiers: string[];
  retiring: string[];
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');

/** Reads a plan record defensively; anything unreadable counts as no record. */
export function readPlanRecord(content: Buffer | undefined): RetryPlanRecord | undefined {
  if (!content) return undefined;
  try {
    const parsed: unknown = JSON.parse(content.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { tiers, retiring } = parsed as Record<string, unknown>;
    return isStringArray(tiers) ? { tiers, retiring: isStringArray(retiring) ? retiring : [] } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The tiers that earlier configurations left and this one does not use: each loses its binding from Q.dlx.first
 * (only the first tier of the previous configuration has one; unbinding the others is a no-op) and is deleted once
 * empty. Until then it stays in the record, so a start that crashes half-way or a later one finishes the job.
 */
export function planTierRetirement(previous: RetryPlanRecord | undefined, current: readonly string[]): string[] {
  if (!previous) return [];
  const keep = new Set(current);
  return [...new Set([...previous.tiers, ...previous.retiring])].filter((name) => !keep.has(name));
}
