import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Checks one exchange against openapi.json: the path and method are documented (or answered
 * with the documented 405), the status is one of the operation's answers, every required
 * header is there and every documented header has its documented form, and the body is the
 * documented media type and schema (or absent where none is documented).
 */
export interface Exchange {
  method: string;
  url: string;
  status: number;
  headers: Headers;
  body: string;
}

type Json = Record<string, unknown>;
interface Located {
  value: Json;
  pointer: string;
}

const DOCUMENT_ID = 'openapi.json';
const CLIENT_CLOSED_REQUEST = 499;
const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace'];

export function createOpenApiValidator(document: Json) {
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; `description`-style annotations are allowed.
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats.default(ajv);
  ajv.addSchema(document, DOCUMENT_ID);
  // Header values are text: `Retry-After: 5` is the integer 5.
  const headerAjv = new Ajv2020({ allErrors: true, strict: false, coerceTypes: true });
  const compiled = new Map<string, ValidateFunction>();
  const paths = Object.entries(document.paths as Record<string, Json>).map(([template, item]) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    item,
  }));

  function resolve(located: Located, seen = 0): Located {
    const ref = located.value.$ref;
    if (typeof ref !== 'string' || seen > 10) return located;
    const pointer = ref.slice(1);
    const value = pointer
      .split('/')
      .slice(1)
      .reduce<unknown>((node, key) => (node as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
    return resolve({ value: value as Json, pointer }, seen + 1);
  }

  function schemaAt(pointer: string): ValidateFunction {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  }

  function headerProblems(name: string, header: Located, value: string | null): string[] {
    if (value === null) return header.value.required === true ? [`header ${name} is missing`] : [];
    const data = { value };
    let validate = compiled.get(`header:${header.pointer}`);
    if (!validate) {
      validate = headerAjv.compile({ type: 'object', properties: { value: header.value.schema } });
      compiled.set(`header:${header.pointer}`, validate);
    }
    if (validate(data)) return [];
    return [`header ${name}: ${JSON.stringify(value)} ${(validate.errors ?? []).map((error) => error.message).join('; ')}`];
  }

  function responseProblems(response: Located, exchange: Exchange): string[] {
    const problems: string[] = [];
    const headers = (response.value.headers ?? {}) as Record<string, Json>;
    for (const [name, header] of Object.entries(headers)) {
      problems.push(
        ...headerProblems(name, resolve({ value: header, pointer: `${response.pointer}/headers/${name}` }), exchange.headers.get(name)),
      );
    }
    const content = response.value.content as Record<string, Json> | undefined;
    if (!content || exchange.method === 'HEAD') {
      if (exchange.body !== '') problems.push(`a body where none is documented: ${exchange.body.slice(0, 200)}`);
      return problems;
    }
    const mediaType = exchange.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() ?? '';
    if (!(mediaType in content))
      return [...problems, `Content-Type ${JSON.stringify(mediaType)} is not one of ${Object.keys(content).join(', ')}`];
    // JSON bodies are checked as values; any other media type (the feeds' XML) as its text.
    let body: unknown = exchange.body;
    if (mediaType === 'application/json') {
      try {
        body = JSON.parse(exchange.body);
      } catch {
        return [...problems, `the body is not JSON: ${exchange.body.slice(0, 200)}`];
      }
    }
    const validate = schemaAt(`${response.pointer}/content/${mediaType.replace(/\//g, '~1')}/schema`);
    if (!validate(body)) problems.push(`body: ${ajv.errorsText(validate.errors, { dataVar: 'body' })}`);
    return problems;
  }

  /** Every way the exchange departs from the document; empty when it conforms. */
  return function check(exchange: Exchange): string[] {
    const { pathname } = new URL(exchange.url);
    // 499: the client hung up before its body arrived, so no answer reached anyone (the access log's record of it).
    if (exchange.status === CLIENT_CLOSED_REQUEST) return [];
    // Demo mode's example site (its pages, scripts, thumbnails, and their 304s) is not part of the
    // API this document describes; outside /api/ only the JSON 404 is.
    const mediaType = exchange.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (!pathname.startsWith('/api/') && mediaType !== 'application/json') return [];
    const path = paths.find((candidate) => candidate.pattern.test(pathname));
    const notFound = resolve({ value: { $ref: '#/components/responses/NotFound' }, pointer: '' });
    if (!path) return exchange.status === 404 ? responseProblems(notFound, exchange) : [`${exchange.status} for an undocumented path`];
    const method = exchange.method.toLowerCase();
    const operation = path.item[method] as Json | undefined;
    if (!operation) {
      // Each path item names its answer to the methods it does not list (a 405 with `Allow`).
      const otherMethods = path.item['x-other-methods'] as Json | undefined;
      if (!otherMethods) return [`${exchange.method} ${path.template}: the path documents no answer for other methods (x-other-methods)`];
      const problems = responseProblems(
        resolve({ value: otherMethods, pointer: `/paths/${path.template.replace(/\//g, '~1')}/x-other-methods` }),
        exchange,
      );
      const documented = METHODS.filter((name) => name in path.item).map((name) => name.toUpperCase());
      const allow = (exchange.headers.get('allow') ?? '').split(',').map((name) => name.trim());
      if (exchange.status !== 405) problems.unshift(`${exchange.status} for a method the document does not list (405 expected)`);
      if ([...allow].sort().join() !== [...documented].sort().join())
        problems.push(`Allow is ${allow.join(', ')}, the document lists ${documented.join(', ')}`);
      return problems;
    }
    const responses = operation.responses as Record<string, Json>;
    const key = [String(exchange.status), `${String(exchange.status)[0]}XX`, 'default'].find((candidate) => candidate in responses);
    if (!key) return [`status ${exchange.status} is not documented for ${exchange.method} ${path.template}`];
    const pointer = `/paths/${path.template.replace(/\//g, '~1')}/${method}/responses/${key}`;
    return responseProblems(resolve({ value: responses[key]!, pointer }), exchange);
  };
}
