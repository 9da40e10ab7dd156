// Client-side search over the prebuilt index (assets/search-index.js sets window.TAP_SEARCH).
// The index is a script, not fetched JSON, so that search works from file:// as well.
(() => {
  var input = document.getElementById('search-input');
  var list = document.getElementById('search-results');
  if (!input || !list) return;
  var root = document.body.getAttribute('data-root') || '';
  var waiting = null;
  var active = -1;

  // Loads the index once; every caller's callback runs when it is there.
  function load(then) {
    if (window.TAP_SEARCH) return then();
    if (waiting) {
      waiting.push(then);
      return;
    }
    waiting = [then];
    var s = document.createElement('script');
    s.src = root + 'assets/search-index.js';
    s.onload = () => {
      var callbacks = waiting;
      waiting = null;
      callbacks.forEach((f) => {
        f();
      });
    };
    document.head.appendChild(s);
  }

  function score(doc, terms) {
    var t = doc.t.toLowerCase();
    var x = doc.x.toLowerCase();
    var total = 0;
    for (var i = 0; i < terms.length; i++) {
      var term = terms[i];
      if (t === term) total += 100;
      else if (t.indexOf(term) === 0) total += 40;
      else if (t.indexOf(term) >= 0) total += 20;
      else if (x.indexOf(term) >= 0) total += 2;
      else return 0;
    }
    return total;
  }

  function snippet(text, terms) {
    var lower = text.toLowerCase();
    var at = lower.indexOf(terms[0]);
    var from = Math.max(0, at - 40);
    return (from > 0 ? '… ' : '') + text.slice(from, from + 160);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function render() {
    var q = input.value.trim().toLowerCase();
    list.textContent = '';
    active = -1;
    if (q.length < 2) {
      list.hidden = true;
      return;
    }
    var terms = q.split(/\s+/);
    var docs = window.TAP_SEARCH.docs;
    var hits = [];
    for (var i = 0; i < docs.length; i++) {
      var s = score(docs[i], terms);
      if (s > 0) hits.push({ s: s, i: i });
    }
    hits.sort((a, b) => b.s - a.s || a.i - b.i);
    if (hits.length === 0) {
      list.appendChild(el('li', 'empty', 'No results for “' + input.value.trim() + '”'));
    }
    hits.slice(0, 12).forEach((h) => {
      var d = docs[h.i];
      var li = el('li');
      var a = el('a');
      a.href = root + d.u;
      a.appendChild(el('span', 'r-kind', d.k));
      a.appendChild(el('span', 'r-title', d.t));
      a.appendChild(el('span', 'r-text', snippet(d.x, terms)));
      li.appendChild(a);
      list.appendChild(li);
    });
    list.hidden = false;
  }

  function move(step) {
    var links = list.querySelectorAll('a');
    if (links.length === 0) return;
    if (active >= 0) links[active].classList.remove('active');
    active = (active + step + links.length) % links.length;
    links[active].classList.add('active');
    links[active].scrollIntoView({ block: 'nearest' });
  }

  input.addEventListener('focus', () => {
    load(() => {});
  });
  input.addEventListener('input', () => {
    load(render);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      move(1);
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      move(-1);
    } else if (e.key === 'Enter') {
      var links = list.querySelectorAll('a');
      var target = links[Math.max(active, 0)];
      if (target) {
        e.preventDefault();
        window.location.href = target.href;
      }
    } else if (e.key === 'Escape') {
      list.hidden = true;
      input.blur();
    }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && document.activeElement !== input) {
      e.preventDefault();
      input.focus();
    }
  });
  document.addEventListener('click', (e) => {
    if (!list.contains(e.target) && e.target !== input) list.hidden = true;
  });
})();
