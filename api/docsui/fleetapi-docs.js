// Starts Swagger UI on the document of this server. Everything it loads
// comes from this server: the page's Content-Security-Policy allows
// nothing else.
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    displayRequestDuration: true,
    filter: true,
    persistAuthorization: false,
    queryConfigEnabled: false,
    tryItOutEnabled: false,
    validatorUrl: null,
    withCredentials: false
  });
});
