// The one static page GET / serves (jobs/cli/rest_server.cc): no CDN, no external file; it
// refreshes itself from GET /api/job and GET /api/checkpoints once a second.
#pragma once

namespace cairn {

inline constexpr const char* kWebPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Cairn job</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
.graph{display:flex;gap:1em;align-items:center;flex-wrap:wrap}
.op{border:1px solid #678;border-radius:6px;padding:.5em .8em;background:#eef3f8}
.arrow{color:#678}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
th{background:#f0f0f0}.failed{color:#b00}.in_progress{color:#a60}
</style></head><body>
<h1>Cairn job <span id="name"></span> &mdash; <span id="state">loading</span></h1>
<div id="meta"></div>
<h2>Job graph</h2><div class="graph" id="graph"></div>
<h2>Throughput (records/s out, checkpoints marked)</h2>
<svg id="chart" width="720" height="180" style="border:1px solid #ccc"></svg>
<h2>Checkpoints</h2>
<div id="counts"></div>
<table id="checkpoints"><thead><tr><th>id</th><th>kind</th><th>status</th><th>trigger time</th><th>duration ms</th>
<th>state bytes</th><th>channel state bytes</th><th>alignment ms</th><th>sync ms</th><th>async ms</th><th>reason</th></tr></thead>
<tbody></tbody></table>
<script>
function esc(s){return String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));}
function fmt(x){return x>=1e6?(x/1e6).toFixed(2)+'M':x>=1e3?(x/1e3).toFixed(1)+'k':x.toFixed(0);}
let history=[];
function draw(job){
  const svg=document.getElementById('chart'),W=720,H=180,t=job.throughput||[];
  if(t.length<2){svg.innerHTML='<text x="10" y="20">waiting for samples</text>';return;}
  const t0=t[0].t,t1=t[t.length-1].t,max=Math.max(1,...t.map(p=>p.records_out_per_second));
  const x=v=>(v-t0)/Math.max(1,t1-t0)*(W-20)+10,y=v=>H-10-v/max*(H-30);
  let s='<polyline fill="none" stroke="#36c" stroke-width="2" points="'+t.map(p=>x(p.t)+','+y(p.records_out_per_second)).join(' ')+'"/>';
  for(const c of history){if(c.trigger_time_ms<t0)continue;
    s+='<line class="ckpt" x1="'+x(c.trigger_time_ms)+'" x2="'+x(c.trigger_time_ms)+'" y1="10" y2="'+(H-10)+'" stroke="'+(c.status=='failed'?'#b00':'#3a3')+'" stroke-dasharray="3,3"/>';}
  s+='<text x="12" y="16">max '+fmt(max)+'/s</text>';
  svg.innerHTML=s;
}
async function refresh(){
  try{
    const job=await (await fetch('/api/job')).json();
    const cps=await (await fetch('/api/checkpoints')).json();
    document.getElementById('name').textContent=job.name;
    document.getElementById('state').textContent=job.state;
    document.getElementById('meta').textContent='started '+new Date(job.start_time_ms).toISOString()+
      (job.restored_from?' \u2014 restored from checkpoint '+job.restored_from:'');
    document.getElementById('graph').innerHTML=job.operators.map(o=>{
      const i=o.subtasks.reduce((a,s)=>a+s.records_in_per_second,0),u=o.subtasks.reduce((a,s)=>a+s.records_out_per_second,0);
      const bp=Math.max(0,...o.subtasks.map(s=>s.backpressured_time_ms_per_second))/10;
      return '<div class="op"><b>'+esc(o.id)+'</b><br>parallelism '+o.parallelism+'<br>in '+fmt(i)+'/s, out '+fmt(u)+'/s<br>backpressure '+bp.toFixed(0)+'%</div>';
    }).join('<span class="arrow">&rarr;</span>');
    history=cps.history;
    document.getElementById('counts').textContent='completed '+cps.counts.completed+', failed '+cps.counts.failed+', in progress '+cps.counts.in_progress;
    document.querySelector('#checkpoints tbody').innerHTML=cps.history.slice().reverse().map(c=>
      '<tr class="'+c.status+'"><td>'+c.id+'</td><td>'+c.kind+'</td><td>'+c.status+'</td><td>'+new Date(c.trigger_time_ms).toISOString()+
      '</td><td>'+c.duration_ms+'</td><td>'+c.state_bytes+'</td><td>'+c.channel_state_bytes+'</td><td>'+c.alignment_ms+
      '</td><td>'+c.sync_ms+'</td><td>'+c.async_ms+'</td><td>'+esc(c.failure||'')+'</td></tr>').join('');
    draw(job);
  }catch(e){document.getElementById('state').textContent='unreachable ('+e+')';}
}
refresh();setInterval(refresh,1000);
</script></body></html>
)HTML";

}  // namespace cairn
