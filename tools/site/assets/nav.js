// On a narrow screen the chapter list folds behind the "Contents" button (site.css, under
// `.js`), so that a page opens on its content; the button opens and closes it.
(() => {
  var nav = document.querySelector('.sidebar');
  var button = nav?.querySelector('.nav-toggle');
  if (!button) return;
  function show(open) {
    nav.classList.toggle('open', open);
    button.setAttribute('aria-expanded', String(open));
  }
  button.addEventListener('click', () => {
    show(!nav.classList.contains('open'));
  });
  // Following a link, to another page or to a section of this one, folds the list again.
  nav.addEventListener('click', (e) => {
    if (e.target.closest('.nav-lists a')) show(false);
  });
})();
