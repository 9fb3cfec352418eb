// search.js: the service's matches (`data-api`), else the page's own list filtered as the service folds words.
export const SEARCH_JS = `// The search page of a site built with newsletter-bff's site:build (see src/tools/site/search-script.ts).
(function () {
  var script = document.currentScript;
  var api = (script.dataset.api || '').replace(/\\/+$/, '');
  var root = script.dataset.root || '/';
  var PAGE_SIZE = 20;
  var MAX_SEARCH = 200;

  var input = document.getElementById('search-q');
  var summary = document.getElementById('search-summary');
  var results = document.getElementById('search-results');
  var more = document.getElementById('search-more');
  var everything = document.getElementById('search-all');
  var q = Array.from((new URLSearchParams(window.location.search).get('q') || '').trim()).slice(0, MAX_SEARCH).join('');
  input.value = q;

  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (name) {
      if (name === 'text') node.textContent = props[name];
      else if (name === 'className') node.className = props[name];
      else node.setAttribute(name, props[name]);
    });
    (children || []).forEach(function (child) { if (child) node.append(child); });
    return node;
  }

  var dateFormat = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });

  function card(issue) {
    var meta = [];
    if (issue.sentAt) meta.push(el('time', { datetime: issue.sentAt, text: dateFormat.format(new Date(issue.sentAt)) }));
    if (issue.category) meta.push(el('a', { href: root + 'categories/' + encodeURIComponent(issue.category.slug) + '/', className: 'category', text: issue.category.name }));
    if (issue.readingMinutes) meta.push(document.createTextNode(issue.readingMinutes + ' min read'));
    var line = el('p', { className: 'meta' });
    meta.forEach(function (part, i) { if (i > 0) line.append(' · '); line.append(part); });
    var thumb = el('div', { className: 'thumb' });
    if (issue.thumbnailUrl && /^https?:/i.test(issue.thumbnailUrl)) thumb.append(el('img', { src: issue.thumbnailUrl, alt: '', loading: 'lazy', decoding: 'async' }));
    return el('li', { className: 'issue-card' }, [
      thumb,
      el('div', { className: 'issue-text' }, [
        el('h2', {}, [el('a', { href: root + 'issues/' + encodeURIComponent(issue.slug) + '/', text: issue.subject })]),
        line,
        issue.previewText ? el('p', { className: 'preview', text: issue.previewText }) : null,
      ]),
    ]);
  }

  function counted(total) {
    return total + (total === 1 ? ' issue matches' : ' issues match') + ' \\u201c' + q + '\\u201d';
  }

  /** The words as the service compares them: lower case, without accents, split on what is not a letter or a digit. */
  function words(text) {
    return text.normalize('NFKD').replace(/\\p{M}+/gu, '').toLowerCase().replace(/(?<=[\\p{L}\\p{N}])['\\u2019\\u02bc](?=[\\p{L}\\p{N}])/gu, '').match(/[\\p{L}\\p{N}]+/gu) || [];
  }

  /** No service: the list of every issue, filtered in the page by its subject, preview and category. */
  function filterList() {
    var wanted = words(q);
    var items = Array.from(everything.querySelectorAll('li'));
    var shown = 0;
    items.forEach(function (item) {
      var own = item.dataset.words.split(' ');
      var match = wanted.every(function (word) {
        return own.some(function (candidate) { return word.length < 3 ? candidate === word : candidate.indexOf(word) === 0; });
      });
      item.hidden = !match;
      if (match) shown += 1;
    });
    summary.textContent = counted(shown) + ' (subject, preview and category)';
  }

  var offset = 0;
  function load() {
    var query = new URLSearchParams({ q: q, limit: String(PAGE_SIZE), offset: String(offset) });
    summary.textContent = 'Searching\\u2026';
    more.hidden = true;
    fetch(api + '/api/issues?' + query, { headers: { Accept: 'application/json' }, credentials: 'omit', signal: AbortSignal.timeout(15000) })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(new Error(String(response.status))); })
      .then(function (body) {
        everything.hidden = true;
        results.hidden = false;
        body.data.forEach(function (issue) { results.append(card(issue)); });
        summary.textContent = body.meta.total === 0 ? 'No issues match \\u201c' + q + '\\u201d.' : counted(body.meta.total);
        offset = body.meta.nextOffset;
        more.hidden = offset === null;
      })
      .catch(function () {
        // The service cannot be reached from here: what the page itself holds.
        results.hidden = true;
        everything.hidden = false;
        filterList();
        summary.textContent += ' \\u2014 the full search could not be reached just now.';
      });
  }

  more.addEventListener('click', load);
  if (!q) return;
  if (api) load();
  else filterList();
})();
`;
