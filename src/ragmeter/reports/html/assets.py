"""The HTML reports' one inline style sheet and one inline script (hashed into the page's
Content-Security-Policy by :mod:`ragmeter.reports.html.page`).

The script filters the per-case table (failing metric, category, case id) and fills a case's
drill-down from the embedded JSON the first time it is opened. It builds every node with
``createElement`` and ``textContent``: no text from the run is ever parsed as markup, and it
makes no link and no request.
"""

from __future__ import annotations

__all__ = ["SCRIPT", "STYLE"]

STYLE = """
:root{--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--panel:#f6f8fa;--accent:#0550ae;
--accent-soft:#b6d4fe;--good:#1a7f37;--bad:#b42318;--warn:#8a5300;--focus:#0969da;
--gold:#7a4d00;--gold-bg:#fff1c2;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9ea7b3;
--line:#3a424d;--panel:#161b22;--accent:#79b8ff;--accent-soft:#1f4a85;--good:#56d364;
--bad:#ff8a80;--warn:#e3b341;--focus:#79b8ff;--gold:#f2cc60;--gold-bg:#3d2e00}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,sans-serif}
main{max-width:1240px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.6rem;margin:.4em 0}h2{font-size:1.25rem;margin:1.6em 0 .5em;
border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1.05rem;margin:1.2em 0 .4em}
.muted,.note{color:var(--muted)}.note{font-size:.9rem}
.skip{position:absolute;left:-9999px}.skip:focus{left:8px;top:8px;background:var(--bg);
padding:4px 8px;z-index:2}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
table{border-collapse:collapse;width:100%;margin:.4em 0 1em;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{background:var(--panel);position:sticky;top:0;z-index:1}
td.num,th.num{text-align:right;white-space:nowrap}
.meta{display:grid;grid-template-columns:repeat(2,max-content minmax(0,1fr));gap:2px 16px;margin:0}
.meta dt{color:var(--muted)}.meta dd{margin:0;overflow-wrap:anywhere}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 14px;
min-width:120px}.card b{display:block;font-size:1.3rem}
.pass{color:var(--good);font-weight:600}.fail{color:var(--bad);font-weight:600}
.unmeasured{color:var(--warn);font-weight:600}.low{color:var(--warn);font-weight:600}
table.scorecard tbody th{font-weight:400}table.scorecard tbody th.head-metric{font-weight:700}
caption{text-align:left}
svg{display:block;overflow:visible}svg text{fill:var(--fg);font-size:11px}
.track{fill:var(--panel);stroke:var(--line)}.ci{fill:var(--accent-soft)}
.val{fill:var(--accent)}.zero{stroke:var(--muted);stroke-dasharray:2 2}
.hbar{fill:var(--accent)}.axis{stroke:var(--muted)}
.pt-front{fill:var(--good)}.pt-dom{fill:var(--muted)}.frontier{stroke:var(--good);fill:none}
.worse-ci{fill:var(--bad)}.better-ci{fill:var(--good)}
.filters{display:flex;flex-wrap:wrap;gap:12px 20px;align-items:end;margin:8px 0;
background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 12px}
.filters label{display:block;font-size:.85rem;color:var(--muted)}
select,input{font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--muted);
border-radius:4px;padding:3px 6px}
summary{cursor:pointer}summary:hover{color:var(--accent)}a{color:var(--accent)}
tbody.case th{font-weight:600;overflow-wrap:anywhere;max-width:260px}
tr.drill>td{background:var(--panel);padding:10px 14px}
.drill dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0 0 8px}
.drill dt{font-weight:600}.drill dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.drill ol{margin:4px 0;padding-left:1.6em}.drill li{margin:4px 0}
.chunk{margin:2px 0;border-left:3px solid var(--line);padding-left:8px;white-space:pre-wrap;
overflow-wrap:anywhere;color:var(--fg)}
.badge{display:inline-block;border-radius:4px;padding:0 6px;font-size:.8rem;font-weight:600;
margin-left:6px}.badge.gold{background:var(--gold-bg);color:var(--gold)}
.badge.err{background:var(--bad);color:var(--bg)}
.scores td.why{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.9rem}
td.example{overflow-wrap:anywhere}
table.deltas{font-size:.88rem}table.deltas th,table.deltas td{padding:4px 6px}
table.deltas tbody th{max-width:220px;overflow-wrap:anywhere}
table.deltas td.ci{white-space:normal;min-width:7em}
.scroll{overflow-x:auto}table.runs{width:auto;min-width:60%}table.runs td{padding-right:32px}
[hidden]{display:none!important}
"""

SCRIPT = """
(function(){"use strict";
var node=document.getElementById("rm-data");if(!node){return;}
var data=JSON.parse(node.textContent);
function S(i){return i>=0?data.strings[i]:null;}
function el(tag,cls,text){var e=document.createElement(tag);if(cls){e.className=cls;}
if(text!==undefined&&text!==null){e.textContent=String(text);}return e;}
function fmt(m,v){var kind=m[1],unit=m[2];
if(kind==="t"){return(Number.isInteger(v)?String(v):v.toFixed(2))+(unit?" "+unit:"");}
if(kind==="d"){return v.toFixed(1)+" ms";}if(kind==="c"){return"$"+v.toFixed(5);}
if(kind==="n"){return v.toFixed(2)+(unit?" "+unit:"");}
var s=v.toFixed(3);return s==="-0.000"?"0.000":s;}
function field(dl,label,text){if(text===undefined||text===null||text===""){return;}
dl.appendChild(el("dt",null,label));dl.appendChild(el("dd",null,text));}
function scoreRow(tb,c,mi,lows,details){var m=data.metrics[mi],entry=c.s[mi],tr=el("tr");
var th=el("th",null,m[0]+(m[3]?" \\u2191":" \\u2193"));th.scope="row";tr.appendChild(th);
var val="",status;if(typeof entry==="number"){val=fmt(m,entry);
status=lows.indexOf(mi)>=0?"low":"ok";}else{status=entry[0]===2?"failed":
(entry[0]===3?"no value":"skipped");}
tr.appendChild(el("td","num",val));
tr.appendChild(el("td",status==="failed"?"fail":(status==="low"?"low":null),status));
var parts=[];if(typeof entry!=="number"&&S(entry[1])!==null){parts.push(S(entry[1]));}
var d=details[mi];if(d){for(var i=0;i<d.length;i++){
parts.push(d[i][0]?d[i][0]+": "+d[i][1]:d[i][1]);}}
tr.appendChild(el("td","why",parts.join("\\n")));tb.appendChild(tr);}
function scoreTable(c,rows,lows,details,caption){var t=el("table","scores");
t.appendChild(el("caption",null,caption));var head=el("thead"),hr=el("tr");
["metric","value","status","why"].forEach(function(h){var x=el("th",null,h);x.scope="col";
hr.appendChild(x);});head.appendChild(hr);t.appendChild(head);var tb=el("tbody");
rows.forEach(function(mi){scoreRow(tb,c,mi,lows,details);});t.appendChild(tb);return t;}
function render(body,c,lows){var dl=el("dl"),details={},i;
if(c.d){for(i=0;i+1<c.d.length;i+=2){details[c.d[i]]=data.details[c.d[i+1]];}}
field(dl,"case",c.id);field(dl,"question",c.q);field(dl,"reference",c.r);
field(dl,"answer",c.a);if(c.ab!==null&&c.ab!==undefined){field(dl,"abstained",c.ab?"yes":"no");}
field(dl,"error",c.e);if(c.g&&c.g.length){field(dl,"gold",c.g.map(S).join(", "));}
body.appendChild(dl);
if(c.k){body.appendChild(el("h4",null,"Retrieved chunks ("+c.k.length+")"));
var ol=el("ol");c.k.forEach(function(k){var li=el("li");
var head=el("div",null,"#"+k[2]+" "+(S(k[0])||"(no id)")+(S(k[1])?" \\u00b7 "+S(k[1]):"")+
(k[3]===null?"":" \\u00b7 score "+k[3]));
if(k[4]){head.appendChild(el("span","badge gold","gold"));}li.appendChild(head);
li.appendChild(el("p","chunk",k[5]+(k[6]>k[5].length?" \\u2026 ("+k[6]+" chars)":"")));
ol.appendChild(li);});body.appendChild(ol);}
if(c.c){body.appendChild(el("h4",null,"Citations ("+c.c.length+")"));var ul=el("ul");
c.c.forEach(function(x){var li=el("li",null,(S(x[0])||"(no id)")+
(x[1]?": \\u201c"+x[1]+"\\u201d":""));
if(x[2]===0){li.appendChild(el("span","badge err","not retrieved"));}ul.appendChild(li);});
body.appendChild(ul);}
if(c.s){var shown=[],skipped=[];for(i=0;i<c.s.length;i++){var s=c.s[i];if(s===null){continue;}
if(typeof s!=="number"&&s[0]===1){skipped.push(i);}else{shown.push(i);}}
shown.sort(function(a,b){return(lows.indexOf(b)>=0)-(lows.indexOf(a)>=0)||a-b;});
body.appendChild(scoreTable(c,shown,lows,details,"Scores ("+shown.length+
"), failed and low first"));
if(skipped.length){var det=el("details");det.appendChild(el("summary",null,skipped.length+
" metrics skipped (with the reason)"));
det.appendChild(scoreTable(c,skipped,lows,details,"Skipped metrics"));body.appendChild(det);}}}
document.addEventListener("toggle",function(ev){var d=ev.target;
if(!d||!d.matches||!d.matches("details[data-i]")){return;}var tb=d.closest("tbody");
if(!tb){return;}var drill=tb.querySelector("tr.drill");if(!d.open){if(drill){drill.hidden=true;}
return;}if(!drill){drill=el("tr","drill");var td=el("td"),body=el("div","drill-body");
td.colSpan=5;td.appendChild(body);drill.appendChild(td);tb.appendChild(drill);
var lows=(tb.getAttribute("data-f")||"").split(" ").filter(function(x){
return x!==""&&x!=="e"&&x!=="!";}).map(Number);
render(body,data.cases[Number(d.getAttribute("data-i"))],lows);}drill.hidden=false;},true);
var fm=document.getElementById("f-metric"),fc=document.getElementById("f-cat"),
ft=document.getElementById("f-text"),count=document.getElementById("f-count");
var rows=document.querySelectorAll("tbody.case"),ids=[];
for(var r=0;r<rows.length;r++){var sm=rows[r].querySelector("summary");
ids.push(sm?sm.textContent.toLowerCase():"");}
function apply(){var m=fm?fm.value:"",c=fc?fc.value:"",t=ft?ft.value.trim().toLowerCase():"";
var shown=0;for(var i=0;i<rows.length;i++){var row=rows[i],
f=" "+(row.getAttribute("data-f")||"")+" ";
var ok=true;if(m==="any"){ok=f.indexOf(" e ")>=0||f.indexOf(" ! ")>=0;}
else if(m!==""){ok=f.indexOf(" "+m+" ")>=0;}
if(ok&&c!==""){ok=row.getAttribute("data-c")===c;}if(ok&&t){ok=ids[i].indexOf(t)>=0;}
row.hidden=!ok;if(ok){shown++;}}
if(count){count.textContent=shown+" of "+rows.length+" cases shown";}}
[fm,fc,ft].forEach(function(x){if(x){x.addEventListener("input",apply);
x.addEventListener("change",apply);}});apply();
})();
"""
