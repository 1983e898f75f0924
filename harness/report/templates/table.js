(function(){
function key(td,numeric){var v=td?td.getAttribute('data-v'):null;if(v===null)v=td?td.textContent:'';
if(numeric){var f=parseFloat(v);return isNaN(f)?-Infinity:f;}return v.toLowerCase();}
document.querySelectorAll('table.sortable').forEach(function(table){
var body=table.tBodies[0];if(!body)return;
table.querySelectorAll('thead th').forEach(function(th,i){th.addEventListener('click',function(){
var asc=th.getAttribute('aria-sort')!=='ascending';
table.querySelectorAll('thead th').forEach(function(o){o.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
var numeric=th.classList.contains('n');var rows=Array.prototype.slice.call(body.rows);
var keyed=rows.map(function(r){return [key(r.cells[i],numeric),r];});
keyed.sort(function(a,b){return a[0]<b[0]?(asc?-1:1):a[0]>b[0]?(asc?1:-1):0;});
var frag=document.createDocumentFragment();keyed.forEach(function(p){frag.appendChild(p[1]);});
body.appendChild(frag);});});});
document.querySelectorAll('[data-filter-for]').forEach(function(box){
var table=document.getElementById(box.getAttribute('data-filter-for'));if(!table)return;
var text=box.querySelector('input[type=search]');
var checks=box.querySelectorAll('input[type=checkbox]');
var count=box.querySelector('.count');
function apply(){var q=text?text.value.trim().toLowerCase():'';var need=[];
checks.forEach(function(c){if(c.checked)need.push(c.value);});var shown=0;
Array.prototype.forEach.call(table.tBodies[0].rows,function(r){
var ok=!q||r.textContent.toLowerCase().indexOf(q)>=0;
for(var j=0;ok&&j<need.length;j++){ok=r.classList.contains(need[j]);}
r.hidden=!ok;if(ok)shown++;});if(count)count.textContent=shown+' shown';}
if(text)text.addEventListener('input',apply);
checks.forEach(function(c){c.addEventListener('change',apply);});
if(count)count.textContent=table.tBodies[0].rows.length+' shown';});
})();
