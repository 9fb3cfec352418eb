/*! newsletter-bff subscribe form enhancement. No dependencies, no build step.
 *
 * Enhances every <form data-newsletter-subscribe>: posts JSON with Accept: application/json to
 * the form's action and shows the outcome in the form's [data-subscribe-status] live region.
 * Without this script the same form still works: the service answers a plain form post with a
 * 303 back to the page, adding ?subscribed=1 or ?subscribe_error=CODE, which this script reads
 * on page load too.
 *
 * Cloudflare Turnstile (the service's TURNSTILE_SECRET_KEY): with window.NEWSLETTER_TURNSTILE_SITE_KEY
 * set (config.js), a form that has no widget of its own gets one before its button. The widget
 * puts its token in the form field `cf-turnstile-response`, sent with the other fields; a token
 * works once, so the widget is reset after every answer. When the service asks for a token the
 * form did not send (403 CAPTCHA_REQUIRED: TURNSTILE_MODE=surge during a surge of sign-ups), the
 * script shows the widget with the site key the answer carries and resubmits once it passes.
 *
 * Every message can be said in the site's own words without editing this file (docs/subscribe.md
 * "Form messages"): a data-message-NAME attribute on the form (data-message-success,
 * data-message-rate-limited, …) or window.NEWSLETTER_SUBSCRIBE_MESSAGES = { success: '…', … }
 * set before this script runs. The names are the keys of DEFAULT_MESSAGES below.
 */
(function () {
  'use strict';

  // Our own words for every outcome: a visitor never sees a status code or a raw error object.
  // Error codes are the service's (docs/contract.md "Errors we return"); anything else gets `other`.
  // `wait` is said after a 429 with {wait} for how long; `second`, `seconds` and `minutes` say it.
  var DEFAULT_MESSAGES = {
    success: 'Thank you! You are subscribed. Look out for the next issue in your inbox.',
    pending: 'Subscribing…',
    email: 'Please enter a valid email address, like name@example.com.',
    consent: 'Please tick the box to confirm that you want the newsletter by email.',
    network: 'We could not reach the newsletter service. Check your connection and try again.',
    challenge: 'One more step: please complete the check below. Your subscription is sent as soon as it passes.',
    wait: 'Too many attempts from your connection. Please try again in {wait}.',
    second: '1 second',
    seconds: '{n} seconds',
    minutes: '{n} minutes',
    VALIDATION_ERROR: 'Please check your email address and the consent box, then try again.',
    FORBIDDEN_ORIGIN: 'This page cannot sign you up. Please use the form on our website.',
    RATE_LIMITED: 'Too many attempts from your connection. Please try again in a minute.',
    UPSTREAM_UNAVAILABLE: 'The newsletter service is busy. Please try again in a minute.',
    CAPTCHA_FAILED: 'Please complete the check above the button, then subscribe again.',
    CAPTCHA_REQUIRED: 'Please complete the check above the button, then subscribe again.',
    other: 'Sorry, something went wrong on our side. Please try again later.'
  };
  var TIMEOUT_MS = 15000;

  /** `RATE_LIMITED` → `messageRateLimited`, `success` → `messageSuccess`: the dataset key of data-message-*. */
  function datasetKey(name) {
    return 'message' + name.toLowerCase().split('_').map(function (word) {
      return word.charAt(0).toUpperCase() + word.slice(1);
    }).join('');
  }

  /** The form's own words (data-message-*), then the site's (NEWSLETTER_SUBSCRIBE_MESSAGES), then ours. */
  function messageFor(form, name) {
    var own = form && form.dataset ? form.dataset[datasetKey(name)] : undefined;
    if (typeof own === 'string' && own) return own;
    var site = window.NEWSLETTER_SUBSCRIBE_MESSAGES;
    if (site && typeof site === 'object' && Object.prototype.hasOwnProperty.call(site, name) && typeof site[name] === 'string') return site[name];
    return DEFAULT_MESSAGES[name];
  }

  function errorText(form, code) {
    var known = typeof code === 'string' && /^[A-Z_]+$/.test(code) && Object.prototype.hasOwnProperty.call(DEFAULT_MESSAGES, code);
    return messageFor(form, known ? code : 'other');
  }

  function waitText(form, seconds) {
    if (seconds < 90) return seconds === 1 ? messageFor(form, 'second') : messageFor(form, 'seconds').replace('{n}', String(seconds));
    return messageFor(form, 'minutes').replace('{n}', String(Math.ceil(seconds / 60)));
  }

  function rateLimitedMessage(form, retryAfter) {
    // Retry-After is delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    var seconds = /^\s*\d+\s*$/.test(retryAfter || '')
      ? Number(retryAfter)
      : Math.ceil((Date.parse(retryAfter) - Date.now()) / 1000);
    if (!(seconds > 0) || seconds > 86400) return messageFor(form, 'RATE_LIMITED');
    return messageFor(form, 'wait').replace('{wait}', waitText(form, seconds));
  }

  var TURNSTILE_SCRIPT = 'https://challenges.cloudflare.com/turnstile/v0/api.js';

  /** Adds the Turnstile widget (and its script, once) when a site key is configured; returns it. */
  function addChallenge(form, button) {
    var siteKey = window.NEWSLETTER_TURNSTILE_SITE_KEY;
    var widget = form.querySelector('.cf-turnstile');
    if (!widget && typeof siteKey === 'string' && siteKey) {
      widget = document.createElement('div');
      widget.className = 'cf-turnstile';
      widget.setAttribute('data-sitekey', siteKey);
      button.parentNode.insertBefore(widget, button);
    }
    if (widget && !document.querySelector('script[src^="' + TURNSTILE_SCRIPT + '"]')) {
      var script = document.createElement('script');
      script.src = TURNSTILE_SCRIPT;
      script.async = true;
      document.head.appendChild(script);
    }
    return widget;
  }

  var explicitCallbacks = [];

  /** Turnstile's script in explicit mode (we render the widget ourselves), then `ready()`. */
  function withTurnstile(ready) {
    if (window.turnstile && typeof window.turnstile.render === 'function') return ready();
    explicitCallbacks.push(ready);
    if (explicitCallbacks.length > 1) return undefined;
    window.newsletterTurnstileLoaded = function () {
      explicitCallbacks.splice(0).forEach(function (callback) { callback(); });
    };
    var script = document.createElement('script');
    script.src = TURNSTILE_SCRIPT + '?render=explicit&onload=newsletterTurnstileLoaded';
    script.async = true;
    document.head.appendChild(script);
    return undefined;
  }

  function enhance(form) {
    var email = form.elements.namedItem('email');
    var consent = form.elements.namedItem('optInAttestation');
    var button = form.querySelector('[type="submit"]');
    var status = form.querySelector('[data-subscribe-status]');
    if (!email || !consent || !button || !status) return undefined;
    if (!status.id) status.id = 'subscribe-status-' + Math.random().toString(36).slice(2);
    var challenge = addChallenge(form, button);
    var pending = false;
    // A challenge the service asked for (CAPTCHA_REQUIRED): the widget we rendered and its token.
    var askedWidget = null;
    var askedContainer = null;
    var askedToken = null;
    // Resubmitted by the widget once per request the service answered with CAPTCHA_REQUIRED, never in a loop.
    var resubmitOnToken = false;
    // Our inline messages replace the browser's bubbles, which screen readers announce unreliably.
    form.noValidate = true;

    function show(state, message, field) {
      status.setAttribute('data-state', state);
      status.textContent = message;
      [email, consent].forEach(function (input) {
        var invalid = input === field;
        if (invalid) {
          input.setAttribute('aria-invalid', 'true');
          input.setAttribute('aria-describedby', status.id);
        } else {
          input.removeAttribute('aria-invalid');
          if (input.getAttribute('aria-describedby') === status.id) input.removeAttribute('aria-describedby');
        }
      });
      if (field) field.focus();
    }

    function setPending(on) {
      pending = on;
      // aria-disabled rather than `disabled`: a disabled button drops keyboard focus to <body>.
      if (on) button.setAttribute('aria-disabled', 'true');
      else button.removeAttribute('aria-disabled');
      form.setAttribute('aria-busy', on ? 'true' : 'false');
    }

    /** Shows the widget the service asked for; its token resubmits the form by itself. */
    function askForChallenge(siteKey) {
      show('pending', messageFor(form, 'challenge'));
      resubmitOnToken = true;
      if (askedWidget !== null) {
        if (askedWidget !== 'pending') window.turnstile.reset(askedWidget);
        return;
      }
      var container = document.createElement('div');
      container.className = 'subscribe-challenge';
      button.parentNode.insertBefore(container, button);
      askedContainer = container;
      askedWidget = 'pending';
      withTurnstile(function () {
        askedWidget = window.turnstile.render(container, {
          sitekey: siteKey,
          // The token is sent by us, once; a hidden field would send it again, spent.
          'response-field': false,
          callback: function (token) {
            askedToken = token;
            if (!resubmitOnToken) return;
            resubmitOnToken = false;
            submit();
          }
        });
      });
    }

    /** After a success the widget the service asked for goes away; the next visitor starts quiet. */
    function removeAskedChallenge() {
      if (askedWidget === null || askedWidget === 'pending') return;
      if (window.turnstile && typeof window.turnstile.remove === 'function') window.turnstile.remove(askedWidget);
      if (askedContainer && askedContainer.parentNode) askedContainer.parentNode.removeChild(askedContainer);
      askedWidget = null;
      askedContainer = null;
    }

    function showFailure(response, body) {
      var error = body && body.ok === false && body.error && typeof body.error === 'object' ? body.error : {};
      var code = error.code;
      if (response.status === 429 || code === 'RATE_LIMITED') {
        return show('error', rateLimitedMessage(form, response.headers.get('Retry-After')));
      }
      if (code === 'CAPTCHA_REQUIRED' && !challenge) {
        var detail = Array.isArray(error.details) && error.details[0] ? error.details[0] : {};
        var siteKey = typeof detail.siteKey === 'string' && detail.siteKey ? detail.siteKey : window.NEWSLETTER_TURNSTILE_SITE_KEY;
        if (typeof siteKey === 'string' && siteKey) return askForChallenge(siteKey);
      }
      if (code === 'VALIDATION_ERROR') {
        var paths = Array.isArray(error.details) ? error.details.map(function (d) { return d && d.path; }) : [];
        if (paths.indexOf('email') !== -1) return show('error', messageFor(form, 'email'), email);
        if (paths.indexOf('optInAttestation') !== -1) return show('error', messageFor(form, 'consent'), consent);
      }
      show('error', errorText(form, code));
    }

    form.addEventListener('submit', function (event) {
      event.preventDefault();
      submit();
    });

    function submit() {
      if (pending) return;
      if (!email.value.trim() || !email.validity.valid) return show('error', messageFor(form, 'email'), email);
      if (!consent.checked) return show('error', messageFor(form, 'consent'), consent);

      // Every other named field (the honeypot, a hidden `source`) goes as it is: the service decides.
      var payload = { email: email.value.trim(), optInAttestation: true };
      new FormData(form).forEach(function (value, name) {
        if (!(name in payload) && typeof value === 'string') payload[name] = value;
      });
      if (askedToken) payload['cf-turnstile-response'] = askedToken;
      // A token works once: whatever the answer, the next attempt needs a new one.
      askedToken = null;

      setPending(true);
      show('pending', messageFor(form, 'pending'));
      var init = {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(payload),
        credentials: 'omit'
      };
      if (typeof AbortSignal !== 'undefined' && AbortSignal.timeout) init.signal = AbortSignal.timeout(TIMEOUT_MS);
      fetch(form.action, init)
        .then(function (response) {
          return response.json().then(
            function (body) { return { response: response, body: body }; },
            function () { return { response: response, body: null }; }
          );
        })
        .then(
          function (result) {
            if (result.response.ok && result.body && result.body.ok === true) {
              form.reset();
              removeAskedChallenge();
              show('success', messageFor(form, 'success'));
            } else {
              showFailure(result.response, result.body);
            }
          },
          function () { show('error', messageFor(form, 'network')); }
        )
        .then(function () {
          setPending(false);
          if (challenge && window.turnstile) window.turnstile.reset(challenge);
        });
    }

    return show;
  }

  function start() {
    var shows = [];
    document.querySelectorAll('form[data-newsletter-subscribe]').forEach(function (form) {
      var show = enhance(form);
      if (show) shows.push({ form: form, show: show });
    });
    // Back from a plain form post (the 303 of the no-JavaScript path): say how it went, once.
    var url = new URL(window.location.href);
    var subscribed = url.searchParams.get('subscribed') === '1';
    var code = url.searchParams.get('subscribe_error');
    if (!shows.length || (!subscribed && code === null)) return;
    var first = shows[0];
    if (subscribed) first.show('success', messageFor(first.form, 'success'));
    else first.show('error', errorText(first.form, code));
    first.form.scrollIntoView({ block: 'nearest' });
    url.searchParams.delete('subscribed');
    url.searchParams.delete('subscribe_error');
    if (url.hash === '#subscribed' || url.hash === '#subscribe-error' || url.hash === '#subscribe-challenge') url.hash = '';
    window.history.replaceState(window.history.state, '', url.href);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
