import type { EncodedCopy } from '../reads/rendered-json.js';

/**
 * The copy of a cached body to send for this `Accept-Encoding` (RFC 9110 §12.5.3): the kept coding
 * weighed highest, `br` before `gzip` at equal weight; `undefined` for the body as it is, which is
 * also the answer when nothing kept is acceptable (as the RFC advises, even where `identity` was refused).
 */
export function chooseCopy(acceptEncoding: string | undefined, copies: readonly EncodedCopy[] | undefined): EncodedCopy | undefined {
  if (copies === undefined || acceptEncoding === undefined || acceptEncoding === '') return undefined;
  const weights = weightsOf(acceptEncoding);
  let best: EncodedCopy | undefined;
  let bestWeight = 0;
  // Not named, the body as it is is the fallback, not a preference.
  const identity = weights.get('identity') ?? weights.get('*') ?? 0;
  // Copies come best first: a later one must weigh more to be chosen.
  for (const copy of copies) {
    const weight = weights.get(copy.coding) ?? weights.get('*') ?? 0;
    if (weight > bestWeight) [best, bestWeight] = [copy, weight];
  }
  return best !== undefined && bestWeight >= identity ? best : undefined;
}

/** Clients send a handful of distinct headers: the first few are parsed once, so made-up ones cannot grow the map. */
const rememberedWeights = new Map<string, ReadonlyMap<string, number>>();
const MAX_REMEMBERED_HEADERS = 64;
/** A weight as RFC 9110 §12.4.2 writes it: 0 to 1, at most three decimals. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const MAX_CODINGS = 32;

function weightsOf(header: string): ReadonlyMap<string, number> {
  const remembered = rememberedWeights.get(header);
  if (remembered !== undefined) return remembered;
  // `gzip;q=0.8, br` → gzip 0.8, br 1 (names lower-cased; a malformed weight counts as 0).
  const weights = new Map<string, number>();
  for (const part of header.split(',').slice(0, MAX_CODINGS)) {
    const [name = '', ...parameters] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '' || weights.has(coding)) continue;
    let weight = 1;
    for (const parameter of parameters) {
      const [key = '', value = ''] = parameter.split('=');
      if (key.trim().toLowerCase() === 'q') weight = QVALUE.test(value.trim()) ? Number(value.trim()) : 0;
    }
    weights.set(coding, weight);
  }
  if (rememberedWeights.size < MAX_REMEMBERED_HEADERS) rememberedWeights.set(header, weights);
  return weights;
}
