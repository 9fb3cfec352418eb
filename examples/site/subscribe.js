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
 * works once, so the widget is reset after every answer.
 */
(function () {
  'use strict';

  // Our own words for every outcome: a visitor never sees a status code or a raw error object.
  var MESSAGES = {
    success: 'Thank you! You are subscribed. Look out for the next issue in your inbox.',
    pending: 'Subscribing…',
    email: 'Please enter a valid email address, like name@example.com.',
    consent: 'Please tick the box to confirm that you want the newsletter by email.',
    network: 'We could not reach the newsletter service. Check your connection and try again.'
  };
  // By the service's error code (docs/contract.md "Errors we return"); anything else gets `other`.
  var ERRORS = {
    VALIDATION_ERROR: 'Please check your email address and the consent box, then try again.',
    FORBIDDEN_ORIGIN: 'This page cannot sign you up. Please use the form on our website.',
    RATE_LIMITED: 'Too many attempts from your connection. Please try again in a minute.',
    UPSTREAM_UNAVAILABLE: 'The newsletter service is busy. Please try again in a minute.',
    CAPTCHA_FAILED: 'Please complete the check above the button, then subscribe again.',
    other: 'Sorry, something went wrong on our side. Please try again later.'
  };
  var TIMEOUT_MS = 15000;

  function errorText(code) {
    return typeof code === 'string' && /^[A-Z_]+$/.test(code) && Object.prototype.hasOwnProperty.call(ERRORS, code)
      ? ERRORS[code]
      : ERRORS.other;
  }

  function waitText(seconds) {
    if (seconds < 90) return seconds === 1 ? '1 second' : seconds + ' seconds';
    var minutes = Math.ceil(seconds / 60);
    return minutes + ' minutes';
  }

  function rateLimitedMessage(retryAfter) {
    // Retry-After is delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    var seconds = /^\s*\d+\s*$/.test(retryAfter || '')
      ? Number(retryAfter)
      : Math.ceil((Date.parse(retryAfter) - Date.now()) / 1000);
    if (!(seconds > 0) || seconds > 86400) return ERRORS.RATE_LIMITED;
    return 'Too many attempts from your connection. Please try again in ' + waitText(seconds) + '.';
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

  function enhance(form) {
    var email = form.elements.namedItem('email');
    var consent = form.elements.namedItem('optInAttestation');
    var button = form.querySelector('[type="submit"]');
    var status = form.querySelector('[data-subscribe-status]');
    if (!email || !consent || !button || !status) return undefined;
    if (!status.id) status.id = 'subscribe-status-' + Math.random().toString(36).slice(2);
    var challenge = addChallenge(form, button);
    var pending = false;
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

    function showFailure(response, body) {
      var error = body && body.ok === false && body.error && typeof body.error === 'object' ? body.error : {};
      var code = error.code;
      if (response.status === 429 || code === 'RATE_LIMITED') {
        return show('error', rateLimitedMessage(response.headers.get('Retry-After')));
      }
      if (code === 'VALIDATION_ERROR') {
        var paths = Array.isArray(error.details) ? error.details.map(function (d) { return d && d.path; }) : [];
        if (paths.indexOf('email') !== -1) return show('error', MESSAGES.email, email);
        if (paths.indexOf('optInAttestation') !== -1) return show('error', MESSAGES.consent, consent);
      }
      show('error', errorText(code));
    }

    form.addEventListener('submit', function (event) {
      event.preventDefault();
      if (pending) return;
      if (!email.value.trim() || !email.validity.valid) return show('error', MESSAGES.email, email);
      if (!consent.checked) return show('error', MESSAGES.consent, consent);

      // Every other named field (the honeypot, a hidden `source`) goes as it is: the service decides.
      var payload = { email: email.value.trim(), optInAttestation: true };
      new FormData(form).forEach(function (value, name) {
        if (!(name in payload) && typeof value === 'string') payload[name] = value;
      });

      setPending(true);
      show('pending', MESSAGES.pending);
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
              show('success', MESSAGES.success);
            } else {
              showFailure(result.response, result.body);
            }
          },
          function () { show('error', MESSAGES.network); }
        )
        .then(function () {
          setPending(false);
          if (challenge && window.turnstile) window.turnstile.reset(challenge);
        });
    });

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
    if (subscribed) first.show('success', MESSAGES.success);
    else first.show('error', errorText(code));
    first.form.scrollIntoView({ block: 'nearest' });
    url.searchParams.delete('subscribed');
    url.searchParams.delete('subscribe_error');
    if (url.hash === '#subscribed' || url.hash === '#subscribe-error') url.hash = '';
    window.history.replaceState(window.history.state, '', url.href);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
