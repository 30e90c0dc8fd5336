/**
 * `/docs`: a self-contained page (no CDN, works air-gapped) that renders /v1/openapi.json —
 * operations grouped by tag, parameters, request bodies and responses with their schemas.
 */
export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vsearch API</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 28px}header h1{margin:0;font-size:20px}
main{max-width:1000px;margin:0 auto;padding:20px}
h2{margin-top:32px;border-bottom:1px solid #d5d9e0}
details{background:#fff;border:1px solid #d5d9e0;border-radius:6px;margin:8px 0}
summary{cursor:pointer;padding:8px 12px;font-family:ui-monospace,monospace}
.m{display:inline-block;min-width:64px;font-weight:700}.get{color:#1769aa}.post{color:#2e7d32}.patch{color:#b26a00}.delete{color:#c62828}
.body{padding:0 14px 12px}pre{background:#f1f3f6;padding:8px;overflow:auto;font-size:12px;border-radius:4px}
.lock{color:#8a6d00;font-size:12px;margin-left:8px}
</style></head><body><header><h1>vsearch API</h1><div id="ver"></div></header><main id="root">Loading /v1/openapi.json …</main>
<script>
const esc=s=>String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
fetch('/v1/openapi.json').then(r=>r.json()).then(doc=>{
  document.getElementById('ver').textContent=doc.info.title+' '+doc.info.version+' — OpenAPI '+doc.openapi;
  const byTag={};
  for(const [path,ops] of Object.entries(doc.paths||{}))for(const [m,op] of Object.entries(ops)){
    const t=(op.tags||['Other'])[0];(byTag[t]=byTag[t]||[]).push([m,path,op]);}
  const root=document.getElementById('root');root.innerHTML='<p>'+esc(doc.info.description||'')+'</p>';
  for(const [tag,ops] of Object.entries(byTag)){
    const h=document.createElement('h2');h.textContent=tag;root.appendChild(h);
    for(const [m,path,op] of ops){
      const d=document.createElement('details');
      const sec=(op.security||[]).length?'<span class=lock>'+op.security.map(s=>Object.keys(s)[0]).join(' or ')+'</span>':'';
      let html='<summary><span class="m '+m+'">'+m.toUpperCase()+'</span>'+esc(path)+' — '+esc(op.summary||'')+sec+'</summary><div class=body>';
      if(op.parameters&&op.parameters.length)html+='<h4>Parameters</h4><pre>'+esc(JSON.stringify(op.parameters.map(p=>({name:p.name,in:p.in,required:!!p.required,schema:p.schema})),null,2))+'</pre>';
      if(op.requestBody)html+='<h4>Request body</h4><pre>'+esc(JSON.stringify(op.requestBody.content,null,2))+'</pre>';
      html+='<h4>Responses</h4><pre>'+esc(JSON.stringify(op.responses,null,2))+'</pre></div>';
      d.innerHTML=html;root.appendChild(d);
    }
  }
  if(doc.components&&doc.components.schemas){const h=document.createElement('h2');h.textContent='Schemas';root.appendChild(h);
    const p=document.createElement('pre');p.textContent=JSON.stringify(doc.components.schemas,null,2);root.appendChild(p);}
}).catch(e=>{document.getElementById('root').textContent='Could not load the OpenAPI document: '+e});
</script></body></html>`;
