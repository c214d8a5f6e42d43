// Shared behaviour. No inline script anywhere: the Content-Security-Policy forbids it.
document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  if (target) target.setAttribute("data-error", String(event.detail.xhr.status));
});
