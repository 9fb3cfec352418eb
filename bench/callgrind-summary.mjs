// A callgrind profile per request, its JavaScript named: callgrind sees V8's JIT code as bare
// addresses, which the perf map V8 writes under --perf-basic-prof names.
//   node bench/callgrind-summary.mjs <profile.callgrind> </tmp/perf-PID.map> <requests measured>
// Prints the instructions per request by kind (regular expressions, the compiler, our JavaScript,
// Node's, V8's builtins, native code), then the functions by their own and by inclusive cost.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TOP = 40;

/** `[start, end, name]` of each JIT code object in a perf map, in the order V8 wrote them. */
function readPerfMap(file) {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const entries = [];
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (match) entries.push([parseInt(match[1], 16), parseInt(match[1], 16) + parseInt(match[2], 16), match[3]]);
  }
  return entries;
}

/**
 * The perf map's name of the code holding `address`. V8 reuses the memory of code it dropped,
 * so ranges can overlap: the entry written last is the code that lived there at the end. The
 * profile names a few thousand addresses at most, so a scan from the end is quick enough.
 */
function nameAt(entries, address) {
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const [start, end, name] = entries[i];
    if (address >= start && address < end) return name;
  }
  return undefined;
}

/** Cost per function from callgrind_annotate, JIT addresses named, summed by name. */
function costs(profile, entries, inclusive) {
  const text = execFileSync('callgrind_annotate', ['--threshold=100', `--inclusive=${inclusive ? 'yes' : 'no'}`, profile], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const byName = new Map();
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!match) continue;
    const cost = Number(match[1].replaceAll(',', ''));
    let name = match[2];
    if (name.includes('PROGRAM TOTALS')) {
      total = cost;
      continue;
    }
    // An address without a symbol in no object file ([???]) is V8's JIT code; one inside a
    // library stays as callgrind names it.
    const jit = /^\?\?\?:0x([0-9a-f]+)(?: \[\?\?\?\])?$/.exec(name);
    if (jit) name = nameAt(entries, parseInt(jit[1], 16)) ?? `JIT ${jit[1]}`;
    else
      name = name
        .replace(/^\?\?\?:/, '')
        .replace(/ \[[^\]]*\]$/, '')
        .replace(/\((?!anonymous namespace\)).*$/, '');
    byName.set(name, (byName.get(name) ?? 0) + cost);
  }
  return { total, byName };
}

function kindOf(name) {
  if (/compiler::|Compil|Maglev|Turbofan/.test(name)) return 'V8 compiler (JIT warm-up)';
  if (name.startsWith('RegExp:')) return 'regular expressions';
  if (/^JS:.*file:.*\/node_modules\//.test(name)) return 'JavaScript of dependencies';
  if (/^JS:.*file:/.test(name)) return 'JavaScript of this server';
  if (/^JS:.*node:/.test(name)) return "Node's JavaScript";
  if (/^(Builtins_|Builtin:|BytecodeHandler:)/.test(name)) return "V8's builtins";
  return 'native code (V8, Node, libc)';
}

export function summarize(profile, perfMap, requests) {
  const entries = readPerfMap(perfMap);
  const own = costs(profile, entries, false);
  const inclusive = costs(profile, entries, true);
  const perRequest = (n) =>
    Math.round(n / requests)
      .toLocaleString('en')
      .padStart(8);
  const lines = [
    `${profile}: ${perRequest(own.total).trim()} instructions per request (${requests.toLocaleString('en')} requests)`,
    '',
    'by kind:',
  ];
  const kinds = new Map();
  for (const [name, cost] of own.byName) kinds.set(kindOf(name), (kinds.get(kindOf(name)) ?? 0) + cost);
  for (const [kind, cost] of [...kinds].sort((a, b) => b[1] - a[1])) lines.push(`${perRequest(cost)}  ${kind}`);
  for (const [title, table] of [
    ['own cost', own.byName],
    ['inclusive cost', inclusive.byName],
  ]) {
    lines.push('', `by function, ${title}:`);
    for (const [name, cost] of [...table].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      lines.push(`${perRequest(cost)}  ${name.slice(0, 120)}`);
  }
  return { total: own.total / requests, text: `${lines.join('\n')}\n` };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [profile, perfMap, requests] = process.argv.slice(2);
  if (!profile || !perfMap || !(Number(requests) > 0)) {
    process.stderr.write('usage: node bench/callgrind-summary.mjs <profile.callgrind> <perf map> <requests measured>\n');
    process.exit(2);
  }
  process.stdout.write(summarize(profile, perfMap, Number(requests)).text);
}
