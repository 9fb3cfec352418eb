import type { EncodedCopy } from '../reads/rendered-json.js';

/**
 * The copy of a cached body to send for this `Accept-Encoding` (RFC 9110 §12.5.3): the coding
 * the client weighs highest among those kept, `br` before `gzip` at equal weight; `undefined` for
 * the body as it is. A coding with `q=0` is refused, `*` stands for every coding not named, and
 * the body as it is is chosen only when named with a higher weight, and stays the answer when
 * nothing kept is acceptable, as the RFC advises, even where `identity` was refused.
 */
export function chooseCopy(acceptEncoding: string | undefined, copies: readonly EncodedCopy[] | undefined): EncodedCopy | undefined {
  if (copies === undefined || acceptEncoding === undefined || acceptEncoding === '') return undefined;
  const weights = weightsOf(acceptEncoding);
  let best: EncodedCopy | undefined;
  let bestWeight = 0;
  // Not named, the body as it is is the fallback, not a preference: any kept coding asked for wins.
  const identity = weights.get('identity') ?? weights.get('*') ?? 0;
  for (const copy of copies) {
    const weight = weights.get(copy.coding) ?? weights.get('*') ?? 0;
    // Copies come best first: a later one must weigh more to be chosen.
    if (weight > bestWeight) [best, bestWeight] = [copy, weight];
  }
  // Weighed below the body as it is (`gzip;q=0.5, identity`): sent as it is.
  return best !== undefined && bestWeight >= identity ? best : undefined;
}

/**
 * A client sends the same `Accept-Encoding` with every request, and browsers send a handful of
 * distinct ones, so parsing it for every cached hit would repeat the same work: the weights of
 * the first MAX_REMEMBERED_HEADERS distinct headers are kept,
 * and any other header is parsed each time, so a client making headers up cannot grow the map.
 */
const rememberedWeights = new Map<string, ReadonlyMap<string, number>>();

function weightsOf(header: string): ReadonlyMap<string, number> {
  let weights = rememberedWeights.get(header);
  if (weights === undefined) {
    weights = parseAcceptEncoding(header);
    if (rememberedWeights.size < MAX_REMEMBERED_HEADERS) rememberedWeights.set(header, weights);
  }
  return weights;
}

/** `gzip;q=0.8, br` → gzip 0.8, br 1 (names lower-cased; a malformed weight counts as 0). */
function parseAcceptEncoding(header: string): Map<string, number> {
  const weights = new Map<string, number>();
  for (const part of header.split(',').slice(0, MAX_CODINGS)) {
    const [name = '', ...parameters] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '') continue;
    let weight = 1;
    for (const parameter of parameters) {
      const [key = '', value = ''] = parameter.split('=');
      if (key.trim().toLowerCase() === 'q') weight = QVALUE.test(value.trim()) ? Number(value.trim()) : 0;
    }
    if (!weights.has(coding)) weights.set(coding, weight);
  }
  return weights;
}

/** A weight as RFC 9110 §12.4.2 writes it: 0 to 1, at most three decimals. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
/** A client names a handful of codings; a longer list is read no further. */
const MAX_CODINGS = 32;
const MAX_REMEMBERED_HEADERS = 64;
