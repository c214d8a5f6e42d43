// Shared behaviour. No inline script anywhere: the Content-Security-Policy forbids it.
document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  if (target) target.setAttribute("data-error", String(event.detail.xhr.status));
});

// <button data-copy="#selector">: copy that field's value (e.g. a new API key).
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.querySelector(button.getAttribute("data-copy"));
  if (!field) return;
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    document.execCommand("copy");
  }
  const label = button.textContent;
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = label; }, 1500);
});
