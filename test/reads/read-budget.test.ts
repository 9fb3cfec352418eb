import { describe, expect, it } from 'vitest';
import { createReadBudget, ReadBudgetExceeded } from '../../src/core/reads/read-budget.js';
import { createFakeClock } from '../helpers.js';

function setup(totalPerMinute = 120, perClientPerMinute = 20) {
  const clock = createFakeClock();
  const dry: string[] = [];
  const budget = createReadBudget({ totalPerMinute, perClientPerMinute, now: clock.now, onExhausted: (scope) => dry.push(scope) });
  /** How many of `count` reads the budget lets through. */
  const allowed = (client: string | undefined, count: number) => {
    let passed = 0;
    for (let i = 0; i < count; i += 1) {
      try {
        budget.take(client);
        passed += 1;
      } catch (error) {
        expect(error).toBeInstanceOf(ReadBudgetExceeded);
      }
    }
    return passed;
  };
  return { budget, clock, dry, allowed };
}

describe('the read budget', () => {
  it('lets one client burst a quarter of its minute, then refuses with the seconds until the next token', () => {
    const { budget, allowed } = setup(120, 20);
    expect(allowed('198.51.100.7', 10)).toBe(5);
    const refusal = (() => {
      try {
        budget.take('198.51.100.7');
      } catch (error) {
        return error as ReadBudgetExceeded;
      }
      throw new Error('expected a refusal');
    })();
    expect(refusal.kind).toBe('rate_limited');
    expect(refusal.retryAfterSeconds).toBe(3);
  });

  it('refills a client at its rate per minute', () => {
    const { clock, allowed } = setup(120, 20);
    allowed('198.51.100.7', 5);
    clock.advance(6_000);
    expect(allowed('198.51.100.7', 5)).toBe(2);
  });

  it('keeps clients apart, and stops everyone at the total', () => {
    const { allowed } = setup(40, 20);
    expect(allowed('198.51.100.1', 10)).toBe(5);
    expect(allowed('198.51.100.2', 10)).toBe(5);
    expect(allowed('198.51.100.3', 10)).toBe(0);
  });

  it('counts a read without a known address in the total only', () => {
    const { allowed } = setup(40, 4);
    expect(allowed(undefined, 20)).toBe(10);
  });

  it('reports a bucket running dry once per dry spell, not once per refused read', () => {
    const { clock, dry, allowed } = setup(120, 20);
    allowed('198.51.100.7', 50);
    expect(dry).toEqual(['client']);
    clock.advance(60_000);
    allowed('198.51.100.7', 50);
    expect(dry).toEqual(['client', 'client']);
  });
});
